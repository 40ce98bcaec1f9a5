import { createLimiter, type Limiter } from '@floodgate/core';
import { REGISTRY_VERSION, indexKey, keySlot, registryKey, topKey } from '@floodgate/core/admin';
import { closeClients, connect, testRedisUrl, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { floodgate, sleep, type Ran } from './helpers';

/*
 * Attack: text the command line prints that someone else wrote. A block reason comes from application code
 * (often from the request), identifiers from clients, and anything in Redis from whoever can write there;
 * an on-call engineer pastes identifiers from logs. Raw in a table, escape sequences clear the screen, set
 * the window title, recolour or hide text, a newline forges a table row and a bidi override reverses what
 * is read. Every field of every command is stored or typed hostile here, against a real Redis, and no
 * output may carry a raw control, format or separator character (only the program's own line ends).
 */
afterAll(closeClients);
const url = testRedisUrl();
const redis = connect(url);
const quiet = { warn: () => undefined };

/** C0 with ESC, CSI and OSC, CR/LF that forge a row, tab, C1 CSI, a bidi override, DEL, zero width, a line separator, a tag character, NUL. */
const HOSTILE =
  'x\x1b[2J\x1b[H\x1b]0;pwned\x07\r\nuser:admin  forged  2099-01-01T00:00:00Z  1d\t\u009b31m\u202egnp.exe\x7f\u200b\u2028\u{E0041}\0end';
/** An identifier typed by the operator: the same, with the ':' that gives it a kind. */
const HOSTILE_ID = `user:${HOSTILE}`;

/** Characters a terminal acts on, or that hide or reorder text. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

function unprintables(text: string): string[] {
  return [...text].filter((c) => c !== '\n' && UNPRINTABLE.test(c)).map((c) => `U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

/** Nothing raw on stdout or stderr; `lines`: the stdout lines expected (a forged row would add one). */
function expectPrintable(ran: Ran, lines?: number): void {
  expect(unprintables(ran.stdout)).toEqual([]);
  expect(unprintables(ran.stderr)).toEqual([]);
  if (lines !== undefined) expect(ran.stdout.split('\n').filter((l) => l !== '')).toHaveLength(lines);
}

/** The escapes an operator sees instead: each hostile character shown, none dropped. */
const VISIBLE = [
  '\\x1b[2J',
  '\\x1b]0;pwned\\x07',
  '\\r\\n',
  '\\t',
  '\\x9b31m',
  '\\u202e',
  '\\x7f',
  '\\u200b',
  '\\u2028',
  '\\u{e0041}',
  '\\x00',
];

async function registered(prefix: string, name: string): Promise<void> {
  for (let i = 0; i < 100 && !(await redis.hexists(registryKey(prefix), name)); i++) await sleep(20);
}

let prefix: string;
let app: Limiter;
const args = (...a: string[]): string[] => [...a, '--url', url, '--prefix', prefix];

beforeAll(async () => {
  prefix = uniquePrefix('hostile');
  app = createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'api', limits: { limit: 5, window: '1m' }, logger: quiet });
  await app.check('user:alice');
  await registered(prefix, 'api');
});
afterAll(() => app.close());

describe('a block reason the application stored', () => {
  beforeAll(async () => {
    await app.block('user:mallory', { duration: '10m', reason: HOSTILE });
  });

  test('blocks: one row per block, every character of the reason escaped and shown', async () => {
    const ran = await floodgate(args('blocks'));
    expect(ran.code).toBe(0);
    expectPrintable(ran, 2);
    expect(ran.stdout).toMatch(/^user:mallory {2}x\\x1b\[2J/m);
    for (const v of VISIBLE) expect(ran.stdout).toContain(v);
  });

  test('inspect and unblock: the reason in their text escaped', async () => {
    await app.check('user:mallory');
    const inspected = await floodgate(args('inspect', 'user:mallory'));
    expect(inspected.code).toBe(0);
    expectPrintable(inspected);
    expect(inspected.stdout).toContain('blocked: x\\x1b[2J');
    const lifted = await floodgate(args('unblock', 'user:mallory'));
    expect(lifted.code).toBe(0);
    expectPrintable(lifted, 1);
    expect(lifted.stdout).toContain('was blocked: x\\x1b[2J');
  });

  test('--json: still JSON that reads back as the stored reason, with C1, DEL, bidi and separators escaped', async () => {
    await app.block('user:mallory', { duration: '10m', reason: HOSTILE });
    for (const command of [['blocks'], ['inspect', 'user:mallory']]) {
      const ran = await floodgate(args(...command, '--json'));
      expect(ran.code).toBe(0);
      expectPrintable(ran);
      const json = JSON.parse(ran.stdout) as { blocks?: { reason: string }[]; block?: { reason: string } };
      expect(json.blocks?.[0]?.reason ?? json.block?.reason).toBe(HOSTILE);
    }
  });
});

describe('what the operator types', () => {
  test('block with a hostile identifier and --reason: the echo is escaped; the block is of the identifier as typed', async () => {
    const ran = await floodgate(args('block', HOSTILE_ID, '--for', '1m', '--reason', HOSTILE));
    expect(ran.code).toBe(0);
    expectPrintable(ran, 1);
    expect(ran.stdout).toMatch(/^blocked user:x\\x1b\[2J.*, reason: x\\x1b\[2J/);
    expect(await app.check(HOSTILE_ID)).toMatchObject({ allowed: false, blockReason: HOSTILE });
  });

  test('inspect: the identifier it echoes, with state and without', async () => {
    const blocked = await floodgate(args('inspect', HOSTILE_ID));
    expect(blocked.code).toBe(0);
    expectPrintable(blocked);
    const nobody = await floodgate(args('inspect', `${HOSTILE_ID}-nobody`));
    expect(nobody.code).toBe(1);
    expectPrintable(nobody, 3);
    expect(nobody.stdout).toContain('holds state for user:x\\x1b[2J');
  });

  test('unblock and reset: the identifier they echo', async () => {
    const lifted = await floodgate(args('unblock', HOSTILE_ID));
    expect(lifted.code).toBe(0);
    expectPrintable(lifted, 1);
    await app.check(HOSTILE_ID);
    const reset = await floodgate(args('reset', HOSTILE_ID));
    expect(reset.code).toBe(0);
    expectPrintable(reset, 1);
    const nothing = await floodgate(args('reset', HOSTILE_ID));
    expect(nothing.code).toBe(1);
    expectPrintable(nothing, 1);
  });

  test.each([
    ['an unknown --name', ['reset', 'user:alice', '--name', HOSTILE]],
    ['an unknown command', [HOSTILE]],
    ['an unknown option', ['blocks', `--${HOSTILE}`]],
    ['a bad --prefix', ['blocks', '--prefix', HOSTILE]],
    ['a bad --minutes', ['top', '--minutes', HOSTILE]],
    ['a bad --for', ['block', 'ip:1', '--for', HOSTILE]],
    ['a bad --url', ['blocks', '--url', `redis://${HOSTILE}`, '--timeout', '500']],
  ])('%s: one line on stderr, escaped', async (_, command) => {
    // The test's --url and --prefix first: an option given again later wins.
    const ran = await floodgate(['--url', url, '--prefix', prefix, ...command]);
    expect(ran.code).toBeGreaterThan(0);
    expect(ran.stdout).toBe('');
    expectPrintable(ran);
    expect(ran.stderr.split('\n')).toHaveLength(2);
  });
});

describe('what anyone who can write to Redis stored', () => {
  test('blocks: an index entry and block key with a raw identifier', async () => {
    const [s] = await redis.time();
    const endsAt = Number(s) * 1000 + 600_000;
    const key = `${prefix}:!b:{${HOSTILE}}`;
    await redis.set(key, `${endsAt}|${HOSTILE}`, 'PX', 600_000);
    await redis.zadd(indexKey(prefix, keySlot(HOSTILE)), endsAt, key);
    const ran = await floodgate(args('blocks'));
    expect(ran.code).toBe(0);
    expectPrintable(ran, 3);
    const json = await floodgate(args('blocks', '--json'));
    expectPrintable(json);
    expect((JSON.parse(json.stdout) as { blocks: { identifier: string }[] }).blocks.map((b) => b.identifier)).toContain(HOSTILE);
  });

  test('top: a raw identifier in the denial sample', async () => {
    // A prefix of its own: the app's denials above reach the shared prefix's sample up to 5 s later (one
    // flush), and would add rows to the table this test counts.
    const p = uniquePrefix('hostile-top');
    const own = createLimiter({ ...TEST_DEADLINE, redis, prefix: p, name: 'api', limits: { limit: 5, window: '1m' }, logger: quiet });
    await own.check('user:alice');
    await registered(p, 'api');
    await own.close();
    const [s] = await redis.time();
    await redis.zincrby(topKey(p, Math.floor(Number(s) / 60)), 7, HOSTILE);
    const ran = await floodgate(['top', '--url', url, '--prefix', p]);
    expect(ran.code).toBe(0);
    expectPrintable(ran, 2);
    expect(ran.stdout).toMatch(/^1 {2}x\\x1b\[2J.* {2}7$/m);
    expectPrintable(await floodgate(['top', '--url', url, '--prefix', p, '--json']));
  });

  test('limiters: a registry entry with a hostile name, plan and rule kind', async () => {
    const p = uniquePrefix('hostile-reg');
    const description = {
      v: REGISTRY_VERSION,
      algorithm: 'fixed-window',
      plans: { [HOSTILE]: [{ limit: 1, window: 60_000, for: HOSTILE }] },
      lockout: null,
      colocate: false,
    };
    await redis.hset(registryKey(p), HOSTILE, JSON.stringify(description));
    const ran = await floodgate(['limiters', '--url', url, '--prefix', p]);
    expect(ran.code).toBe(0);
    expectPrintable(ran, 2);
    const json = await floodgate(['limiters', '--url', url, '--prefix', p, '--json']);
    expectPrintable(json);
    expect((JSON.parse(json.stdout) as { limiters: { name: string }[] }).limiters[0]!.name).toBe(HOSTILE);
    // inspect rebuilds the limiter, whose name core refuses: the refusal quotes it, escaped.
    const inspected = await floodgate(['inspect', 'ip:1', '--url', url, '--prefix', p]);
    expect(inspected.code).toBe(2);
    expectPrintable(inspected);
  });
});
