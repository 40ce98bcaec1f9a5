import { createLimiter } from '@floodgate/core';
import { registryKey } from '@floodgate/core/admin';
import { closeClients, connect, freePort, spawnRedis, type RedisProcess, TEST_DEADLINE } from '@floodgate/testing';
import { floodgate, sleep, type Ran } from './helpers';

/*
 * Attack: a Redis password reaching the terminal, a CI log or a shared screen through the command line's
 * messages. docs/cli.md promises passwords never appear; every form of URL a person types (or a typo of one)
 * is tried here, given by --url, --url=, $REDIS_URL and as a stray argument, and the secret must not appear
 * on stdout or stderr in any encoding.
 */
afterAll(closeClients);

const SECRET = 'Tr0ub4dor-Secret';
/** Every spelling of the password a message could carry. */
function spellings(secret: string): string[] {
  return [...new Set([secret, encodeURIComponent(secret), secret.replace(/@/g, '%40'), JSON.stringify(secret).slice(1, -1)])];
}

function expectNoSecret(ran: Ran, secret: string): void {
  for (const s of spellings(secret)) {
    expect(ran.stdout).not.toContain(s);
    expect(ran.stderr).not.toContain(s);
  }
}

/** How the URL reaches the program. */
const WAYS: [string, (url: string) => [string[], Record<string, string>]][] = [
  ['--url', (url) => [['blocks', '--url', url, '--timeout', '1000'], {}]],
  ['--url=', (url) => [['blocks', `--url=${url}`, '--timeout', '1000'], {}]],
  ['$REDIS_URL', (url) => [['blocks', '--timeout', '1000'], { REDIS_URL: url }]],
];

describe('a server that is not there: every URL form, every way in', () => {
  let port: number;
  beforeAll(async () => {
    port = await freePort();
  });

  // [form, url (with {port}), the secret it holds]
  const FORMS: [string, string, string][] = [
    ['userinfo password', 'redis://user:{s}@127.0.0.1:{port}', SECRET],
    ['password without a user', 'redis://:{s}@127.0.0.1:{port}', SECRET],
    ['?password= query', 'redis://127.0.0.1:{port}?password={s}', SECRET],
    ['both, with a db', 'redis://user:{s}@127.0.0.1:{port}/0?db=0&password={s}', SECRET],
    ['rediss:// (TLS)', 'rediss://user:{s}@127.0.0.1:{port}', SECRET],
    ['a letter in the port', 'redis://user:{s}@127.0.0.1:63a79', SECRET],
    ['a port out of range', 'redis://user:{s}@127.0.0.1:99999', SECRET],
    ['one slash after the scheme', 'redis:/user:{s}@127.0.0.1:{port}', SECRET],
    ['no slash after the scheme', 'redis:user:{s}@127.0.0.1:{port}', SECRET],
    ['no scheme', 'user:{s}@127.0.0.1:{port}', SECRET],
    ['an unencoded @ in the password', 'redis://user:{s}@127.0.0.1:{port}', 'Tr0ub@dor-Secret'],
    ['an unencoded @ and a port typo', 'redis://user:{s}@127.0.0.1:6379x', 'Tr0ub@dor-Secret'],
    ['an unencoded / in the password', 'redis://user:{s}@127.0.0.1:{port}', 'Tr0ub/dor-Secret'],
    ['an unencoded # in the password', 'redis://user:{s}@127.0.0.1:{port}', 'Tr0ub#dor-Secret'],
    ['an unencoded ? in the password', 'redis://user:{s}@127.0.0.1:{port}', 'Tr0ub?dor-Secret'],
    ['a colon in the password', 'redis://user:{s}@127.0.0.1:{port}', 'Tr0ub:dor-Secret'],
    ['an unclosed IPv6 bracket', 'redis://user:{s}@[::1:{port}', SECRET],
    ['a unix socket URL with ?password=', 'unix:///tmp/floodgate-none.sock?password={s}', SECRET],
    ['a unix socket URL with userinfo', 'redis+unix://:{s}@/tmp/floodgate-none.sock', SECRET],
    ['redis:// with a socket path', 'redis:///tmp/floodgate-none.sock?password={s}', SECRET],
    ['a bare socket path', '/tmp/floodgate-none.sock?password={s}', SECRET],
    ['an http:// URL', 'http://user:{s}@127.0.0.1:{port}', SECRET],
  ];

  describe.each(FORMS)('%s', (_, form, secret) => {
    test.each(WAYS)('given by %s: no secret on stdout or stderr, a masked URL in the message', async (_way, how) => {
      const url = form.replace(/\{s\}/g, secret).replace(/\{port\}/g, String(port));
      const [args, env] = how(url);
      const ran = await floodgate(args, env);
      expect([2, 3]).toContain(ran.code);
      expect(ran.stderr).toMatch(/^floodgate: .+\n$/);
      expect(ran.stderr).toContain('***');
      expectNoSecret(ran, secret);
    });
  });

  test('a URL typed where the command goes is masked too', async () => {
    const ran = await floodgate([`redis://user:${SECRET}@127.0.0.1:${port}`, 'blocks']);
    expect(ran.code).toBe(2);
    expectNoSecret(ran, SECRET);
  });
});

describe('a server that asks for the password', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    server = await spawnRedis();
    // Set after the start: the harness waits for a PING that a password would refuse.
    await connect(server.url).config('SET', 'requirepass', SECRET);
  });
  afterAll(() => server.stop());

  test.each([
    ['userinfo', (p: number) => `redis://:${SECRET}@127.0.0.1:${p}`],
    ['?password=', (p: number) => `redis://127.0.0.1:${p}?password=${SECRET}`],
  ])('the right password (%s), no limiters under the prefix: exit 4, the URL masked', async (_, url) => {
    const ran = await floodgate(['blocks', '--url', url(server.port)]);
    expect(ran.code).toBe(4);
    expect(ran.stderr).toContain(`127.0.0.1:${server.port}`);
    expect(ran.stderr).toContain('***');
    expectNoSecret(ran, SECRET);
  });

  test('a wrong password: exit 3, neither the wrong one nor anything of the URL', async () => {
    const wrong = 'Wr0ng-Password-123';
    const ran = await floodgate(['blocks', '--url', `redis://default:${wrong}@127.0.0.1:${server.port}`]);
    expect(ran.code).toBe(3);
    expect(ran.stderr).toMatch(/WRONGPASS|invalid password/i);
    expectNoSecret(ran, wrong);
  });

  test('every command, tables and --json, with the password in the URL: it is in no output', async () => {
    const admin = connect(`redis://:${SECRET}@127.0.0.1:${server.port}`);
    const app = createLimiter({
      ...TEST_DEADLINE,
      redis: admin,
      name: 'api',
      limits: { limit: 1, window: '1m' },
      logger: { warn: () => undefined },
    });
    await app.check('ip:1');
    await app.check('ip:1');
    await app.block('ip:2', { duration: '1m', reason: 'test' });
    await app.close();
    for (let i = 0; i < 100 && !(await admin.hexists(registryKey('floodgate'), 'api')); i++) await sleep(20);
    const url = `redis://default:${SECRET}@127.0.0.1:${server.port}/0?password=${SECRET}`;
    const commands = [
      ['limiters'],
      ['inspect', 'ip:1'],
      ['blocks'],
      ['top'],
      ['block', 'ip:3', '--for', '1m'],
      ['unblock', 'ip:3'],
      ['reset', 'ip:1'],
    ];
    for (const json of [[], ['--json']]) {
      const codes: Record<string, number | null> = {};
      for (const args of commands) {
        const ran = await floodgate([...args, ...json, '--url', url]);
        codes[args[0]!] = ran.code;
        expectNoSecret(ran, SECRET);
      }
      // The second round has nothing left to reset (exit 1); everything else found what it looked for.
      expect(codes).toEqual({
        limiters: 0,
        inspect: json.length === 0 ? 0 : 1,
        blocks: 0,
        top: 0,
        block: 0,
        unblock: 0,
        reset: json.length === 0 ? 0 : 1,
      });
    }
  });
});
