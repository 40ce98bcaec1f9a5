import { createLimiter, type Limiter } from '@floodgate/core';
import { registryKey } from '@floodgate/core/admin';
import { closeClients, connect, freePort, testRedisUrl, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { EXIT } from '../src';
import { floodgate, sleep, type Ran } from './helpers';

/*
 * Under --json a script reads errors as JSON too: one line on stderr, {"error":{"code","message","exit"}},
 * with the exit code the process ends with and stdout empty, for every kind of error (docs/cli.md).
 */
afterAll(closeClients);
const url = testRedisUrl();
const redis = connect(url);

interface JsonError {
  error: { code: string; message: string; exit: number };
}

/** The run's error, checked to be one JSON line on stderr with nothing on stdout and the exit code it names. */
function jsonError(ran: Ran): JsonError['error'] {
  expect(ran.stdout).toBe('');
  expect(ran.stderr.endsWith('\n')).toBe(true);
  expect(ran.stderr.slice(0, -1)).not.toContain('\n');
  const parsed = JSON.parse(ran.stderr) as JsonError;
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(Object.keys(parsed.error)).toEqual(['code', 'message', 'exit']);
  expect(parsed.error.exit).toBe(ran.code);
  return parsed.error;
}

/** The same command without --json: its one-line message, which the JSON's message must equal. */
async function textMessage(args: string[], env: Record<string, string> = {}): Promise<string> {
  const ran = await floodgate(
    args.filter((a) => a !== '--json'),
    env,
  );
  return ran.stderr.replace(/^floodgate: /, '').trimEnd();
}

describe('usage errors (exit 2), wherever --json is on the line', () => {
  test.each([
    [['frobnicate', '--json']],
    [['--json', 'inspcet', 'ip:1']],
    [['--json']],
    [['inspect', '--json']],
    [['inspect', '203.0.113.7', '--json']],
    [['block', 'ip:1', '--for', 'soon', '--json']],
    [['top', '--json', '--minute', '5']],
    [['blocks', '--json', '--url', 'http://localhost']],
    [['blocks', '--json', '--timeout', '0']],
  ])('%j', async (args) => {
    const env = { REDIS_URL: 'redis://127.0.0.1:1' };
    const ran = await floodgate(args, env);
    expect(ran.code).toBe(EXIT.usage);
    expect(jsonError(ran)).toEqual({ code: 'usage', message: await textMessage(args, env), exit: 2 });
  });
});

test('a connection error (exit 3): the URL masked, the password in no form, even JSON-escaped', async () => {
  const port = await freePort();
  const secret = 'Tr0ub"4\\dor-Secret';
  const ran = await floodgate(['blocks', '--json', '--timeout', '1000', '--url', `redis://user:${secret}@127.0.0.1:${port}`]);
  expect(ran.code).toBe(EXIT.connection);
  const error = jsonError(ran);
  expect(error).toEqual({
    code: 'connection',
    message: `cannot connect to redis://user:***@127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    exit: 3,
  });
  for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]) expect(ran.stderr).not.toContain(form);
});

test('no limiters under the prefix (exit 4): the wrong-prefix hint kept', async () => {
  const prefix = uniquePrefix('jsonempty');
  const ran = await floodgate(['blocks', '--json', '--url', url, '--prefix', prefix]);
  expect(ran.code).toBe(EXIT.notFloodgate);
  expect(jsonError(ran)).toEqual({
    code: 'notFloodgate',
    message: `no Floodgate limiters under prefix '${prefix}' on ${url}: wrong --prefix or --url? (a limiter registers itself at its first check)`,
    exit: 4,
  });
});

describe('on a prefix with a limiter', () => {
  let prefix: string;
  let app: Limiter;
  beforeAll(async () => {
    prefix = uniquePrefix('jsonerr');
    app = createLimiter({
      ...TEST_DEADLINE,
      redis,
      prefix,
      name: 'api',
      limits: { limit: 5, window: '1m' },
      logger: { warn: () => undefined },
    });
    await app.check('ip:1');
    for (let i = 0; i < 100 && !(await redis.hexists(registryKey(prefix), 'api')); i++) await sleep(20);
  });
  afterAll(() => app.close());
  const args = (...a: string[]): string[] => [...a, '--json', '--url', url, '--prefix', prefix];

  test('an error that means "nothing to do" (exit 1): reset --name of no limiter', async () => {
    const ran = await floodgate(args('reset', 'ip:1', '--name', 'nope'));
    expect(ran.code).toBe(EXIT.nothing);
    expect(jsonError(ran)).toEqual({ code: 'nothing', message: `no limiter named 'nope' under prefix '${prefix}' (known: api)`, exit: 1 });
  });

  test("core's own argument check after connecting (exit 2): a reason longer than 256 characters", async () => {
    const ran = await floodgate(args('block', 'user:1', '--for', '1m', '--reason', 'x'.repeat(300)));
    expect(ran.code).toBe(EXIT.usage);
    const error = jsonError(ran);
    expect(error.code).toBe('usage');
    expect(error.message).toMatch(/reason/);
  });

  test('hostile text in a message reads back exactly from the JSON, and the line holds no raw control or format character', async () => {
    const hostile = 'user:x\x1b[2J\r\n\u202e\u2028\x7f';
    const ran = await floodgate(args('reset', hostile, '--name', `n\x1b]0;pwned\x07`));
    expect(ran.code).toBe(EXIT.nothing);
    expect(ran.stderr.slice(0, -1)).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
    expect(jsonError(ran).message).toBe(`no limiter named 'n\x1b]0;pwned\x07' under prefix '${prefix}' (known: api)`);
  });
});
