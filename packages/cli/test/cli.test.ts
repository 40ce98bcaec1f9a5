import { createLimiter, type Limiter } from '@floodgate/core';
import { indexKey, keySlot, registryKey } from '@floodgate/core/admin';
import type Redis from 'ioredis';
import {
  closeClients,
  connect,
  freePort,
  spawnRedis,
  testRedisUrl,
  uniquePrefix,
  type RedisProcess,
  TEST_DEADLINE,
} from '@floodgate/testing';
import { floodgate, floodgateBin, floodgateJson, sleep } from './helpers';

/*
 * Issue 15, item 4: the built `floodgate` command line in a child process, against the test Redis: its
 * tables, its --json and its exit codes, and the block index the scripts keep for `blocks`.
 */
afterAll(closeClients);
const url = testRedisUrl();
const redis = connect(url);
const quiet = { warn: () => undefined };

interface Setup {
  prefix: string;
  api: Limiter;
  login: Limiter;
  /** floodgate <args> --url <test Redis> --prefix <prefix> */
  args(...args: string[]): string[];
}

async function setup(): Promise<Setup> {
  const prefix = uniquePrefix('cli');
  const api = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix,
    name: 'api',
    algorithm: 'sliding-window',
    limits: [
      { limit: 100, window: '1m' },
      { limit: 1000, window: '1h' },
    ],
    logger: quiet,
  });
  const login = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix,
    name: 'login',
    algorithm: 'fixed-window',
    limits: { limit: 3, window: '15m', for: 'ip' },
    lockout: { after: 2, within: '15m', duration: '1h', scope: 'ip' },
    logger: quiet,
  });
  return { prefix, api, login, args: (...args) => [...args, '--url', url, '--prefix', prefix] };
}

/** Waits for the registry entries written (not awaited) after the limiters' first checks. */
async function registered(prefix: string, names: string[], client: Redis = redis): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await client.hkeys(registryKey(prefix))).sort().join() === names.join()) return;
    await sleep(20);
  }
  throw new Error(`registry of ${prefix} never held ${names.join(', ')}`);
}

describe('on one Redis', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup();
    for (let i = 0; i < 3; i++) expect((await s.api.check(['ip:203.0.113.7', 'user:alice'])).allowed).toBe(true);
    // login: 3 admitted, then 2 denials lock the client out (the second denial writes the lockout).
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(await s.login.check('ip:203.0.113.7'));
    expect(outcomes.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(outcomes[4]).toMatchObject({ reason: 'blocked', blockReason: 'lockout' });
    await registered(s.prefix, ['api', 'login']);
  });
  afterAll(async () => {
    await s.api.close();
    await s.login.close();
  });

  test('limiters: the registry the limiters wrote at their first check', async () => {
    const { code, json } = await floodgateJson<{ limiters: { name: string; algorithm: string; lockout: unknown }[] }>(s.args('limiters'));
    expect(code).toBe(0);
    expect(json.limiters.map((l) => [l.name, l.algorithm, l.lockout !== null])).toEqual([
      ['api', 'sliding-window', false],
      ['login', 'fixed-window', true],
    ]);
    const table = await floodgate(s.args('limiters'));
    expect(table.stdout.split('\n')[0]).toMatch(/^LIMITER\s+ALGORITHM\s+RULES\s+LOCKOUT$/);
    expect(table.stdout).toMatch(/^login\s+fixed-window\s+3\/15m \(ip\)\s+after 2 in 15m: 1h \(ip\)$/m);
  });

  test('inspect: every rule holding state, the block and the lockout, without consuming anything', async () => {
    const before = await s.api.peek('ip:203.0.113.7');
    const { code, json } = await floodgateJson<{
      block: { reason: string; remainingMs: number } | null;
      limiters: { name: string; rules: { limit: number; remaining: number; for: string | null }[]; lockout: { lockouts: number } | null }[];
    }>(s.args('inspect', 'ip:203.0.113.7'));
    expect(code).toBe(0);
    expect(json.block).toMatchObject({ reason: 'lockout' });
    expect(json.block!.remainingMs).toBeGreaterThan(3_590_000);
    expect(json.block!.remainingMs).toBeLessThanOrEqual(3_600_000);
    const byName = Object.fromEntries(json.limiters.map((l) => [l.name, l]));
    expect(byName.api!.rules.map((r) => [r.limit, r.remaining])).toEqual([
      [100, 97],
      [1000, 997],
    ]);
    expect(byName.login!.rules).toEqual([expect.objectContaining({ limit: 3, remaining: 0, for: 'ip' })]);
    expect(byName.login!.lockout).toMatchObject({ lockouts: 1 });
    // Read only: the counts are what they were.
    expect((await s.api.peek('ip:203.0.113.7')).remaining).toBe(before.remaining);
    const table = await floodgate(s.args('inspect', 'ip:203.0.113.7'));
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^blocked: lockout, until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in (59m \d+s|1h)\)$/m);
    expect(table.stdout).toMatch(/^api\s+-\s+100 per 1m\s+97\/100\s+\S/m);
    expect(table.stdout).toMatch(/^login\s+-\s+3 per 15m \(ip\)\s+0\/3\s+\S/m);
    expect(table.stdout).toMatch(/^login\s+0 of 2 within 15m\s+1\s+\d{4}-/m);
  });

  test('inspect: an identifier with no state and no block exits 1', async () => {
    const ran = await floodgate(s.args('inspect', 'user:nobody'));
    expect(ran.code).toBe(1);
    expect(ran.stdout).toContain(`no limiter under prefix '${s.prefix}' holds state for user:nobody`);
    const { code, json } = await floodgateJson(s.args('inspect', 'user:nobody'));
    expect(code).toBe(1);
    expect(json).toMatchObject({ identifier: 'user:nobody', block: null, limiters: [] });
  });

  test('block, blocks, unblock: every limiter of the prefix denies, and the index lists exactly the blocks in force', async () => {
    const blocked = await floodgate(s.args('block', 'user:mallory', '--for', '10m', '--reason', 'credential stuffing'));
    expect(blocked.code).toBe(0);
    expect(blocked.stdout).toMatch(/^blocked user:mallory until \S+Z \(10m\), reason: credential stuffing\n$/);
    // The application's limiters see it at once.
    expect(await s.api.check('user:mallory')).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'credential stuffing' });
    const { code, json } = await floodgateJson<{ blocks: { identifier: string; reason: string; remainingMs: number }[] }>(s.args('blocks'));
    expect(code).toBe(0);
    expect(json.blocks.map((b) => [b.identifier, b.reason])).toEqual([
      ['user:mallory', 'credential stuffing'],
      ['ip:203.0.113.7', 'lockout'],
    ]);
    expect(json.blocks[0]!.remainingMs).toBeGreaterThan(590_000);
    const table = await floodgate(s.args('blocks'));
    expect(table.stdout.split('\n')[0]).toMatch(/^IDENTIFIER\s+REASON\s+ENDS\s+IN$/);
    expect(table.stdout).toMatch(/^user:mallory\s+credential stuffing\s+\S+Z\s+(9m \d+s|10m)$/m);

    const lifted = await floodgate(s.args('unblock', 'user:mallory'));
    expect(lifted.code).toBe(0);
    expect(lifted.stdout).toMatch(/^unblocked user:mallory \(was blocked: credential stuffing, until \S+Z\)$/m);
    expect((await s.api.check('user:mallory')).allowed).toBe(true);
    const after = await floodgateJson<{ blocks: { identifier: string }[] }>(s.args('blocks'));
    expect(after.json.blocks.map((b) => b.identifier)).toEqual(['ip:203.0.113.7']);
    // The unblock script took the entry out of its slot's index in the same call.
    expect(await redis.zscore(indexKey(s.prefix, keySlot('user:mallory')), `${s.prefix}:!b:{user:mallory}`)).toBeNull();
    const again = await floodgate(s.args('unblock', 'user:mallory'));
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('user:mallory was not blocked\n');
  });

  test("blocks reads every slot's index within a short --timeout: it is per command, not for all 16,385 reads", async () => {
    // All sent at once, the last index reads waited behind the rest: 300 ms failed (exit 3) on an idle machine.
    const ran = await floodgateJson<{ blocks: { identifier: string }[] }>(s.args('blocks', '--timeout', '250'));
    expect(ran.code).toBe(0);
    expect(ran.json.blocks.map((b) => b.identifier)).toEqual(['ip:203.0.113.7']);
  });

  test('unblock lifts a lockout and forgets its escalation; blocks then has nothing (exit 1)', async () => {
    const p = await setup();
    try {
      for (let i = 0; i < 5; i++) await p.login.check('ip:192.0.2.1');
      await registered(p.prefix, ['login']);
      expect((await floodgateJson<{ blocks: unknown[] }>(p.args('blocks'))).json.blocks).toHaveLength(1);
      expect((await floodgate(p.args('unblock', 'ip:192.0.2.1'))).code).toBe(0);
      expect(await redis.exists(`${p.prefix}:login:lo:{ip:192.0.2.1}`)).toBe(0);
      const none = await floodgate(p.args('blocks'));
      expect(none.code).toBe(1);
      expect(none.stdout).toBe(`no identifier is blocked under prefix '${p.prefix}'\n`);
      // The last entry gone, the index key is gone too.
      expect(await redis.exists(indexKey(p.prefix, keySlot('ip:192.0.2.1')))).toBe(0);
    } finally {
      await p.api.close();
      await p.login.close();
    }
  });

  test('blocks: an ended block drops out, and the next write trims it from the index', async () => {
    const p = await setup();
    // A limiter of the same prefix whose clock runs an hour behind: its one-minute block ended long ago, by
    // the server's clock the command line reads (rule time moved, not the test's wall clock: no wait).
    const behind = createLimiter({
      ...TEST_DEADLINE,
      redis,
      prefix: p.prefix,
      name: 'behind',
      limits: { limit: 5, window: '1m' },
      clock: () => Date.now() - 3_600_000,
      logger: quiet,
    });
    try {
      await p.api.check('ip:1.1.1.1');
      await registered(p.prefix, ['api']);
      await behind.block('ip:1.1.1.1', { duration: '1m', reason: 'ended' });
      const index = indexKey(p.prefix, keySlot('ip:1.1.1.1'));
      expect(await redis.zcard(index)).toBe(1);
      const ended = await floodgate(p.args('blocks'));
      expect(ended.code).toBe(1);
      // A block in force beside it is listed alone.
      await p.api.block('ip:1.1.1.3', { duration: '1m', reason: 'current' });
      const listed = await floodgateJson<{ blocks: { identifier: string }[] }>(p.args('blocks'));
      expect(listed.json.blocks.map((b) => b.identifier)).toEqual(['ip:1.1.1.3']);
      // Another block in the same slot trims the ended entry in its own call.
      let other = 'ip:1.1.1.2';
      for (let k = 0; keySlot(other) !== keySlot('ip:1.1.1.1'); k++) other = `ip:x${k}`;
      await p.api.block(other, { duration: '1m' });
      expect(await redis.zrange(index, '0', '-1')).toEqual([`${p.prefix}:!b:{${other}}`]);
    } finally {
      await behind.close();
      await p.api.close();
      await p.login.close();
    }
  });

  test('reset: forgets the counts of every limiter or of one (--name); nothing to reset exits 1', async () => {
    const p = await setup();
    try {
      await p.api.check('user:bob');
      await p.api.check('user:bob');
      await registered(p.prefix, ['api']);
      const unknown = await floodgate(p.args('reset', 'user:bob', '--name', 'nope'));
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe(`floodgate: no limiter named 'nope' under prefix '${p.prefix}' (known: api)\n`);
      const { code, json } = await floodgateJson(p.args('reset', 'user:bob', '--name', 'api'));
      expect(code).toBe(0);
      expect(json).toEqual({ identifier: 'user:bob', limiters: ['api'], reset: ['api'] });
      expect((await p.api.peek('user:bob')).remaining).toBe(100);
      const again = await floodgate(p.args('reset', 'user:bob'));
      expect(again.code).toBe(1);
      expect(again.stdout).toBe('user:bob had no counts in api: nothing to reset\n');
    } finally {
      await p.api.close();
      await p.login.close();
    }
  });

  test('top: the most-denied identifiers, from the denial sample the limiters flush', async () => {
    const p = await setup();
    try {
      const tight = createLimiter({
        ...TEST_DEADLINE,
        redis,
        prefix: p.prefix,
        name: 'tight',
        algorithm: 'fixed-window',
        limits: { limit: 1, window: '1m' },
        logger: quiet,
      });
      for (let i = 0; i < 6; i++) await tight.check('ip:10.0.0.1');
      for (let i = 0; i < 3; i++) await tight.check('ip:10.0.0.2');
      await tight.check('ip:10.0.0.3');
      await tight.peek('ip:10.0.0.3'); // a peek's denial is not counted
      await tight.close(); // flushes the sample
      await registered(p.prefix, ['tight']);
      const { code, json } = await floodgateJson(p.args('top'));
      expect(code).toBe(0);
      expect(json).toEqual({
        minutes: 5,
        top: [
          { identifier: 'ip:10.0.0.1', denials: 5 },
          { identifier: 'ip:10.0.0.2', denials: 2 },
        ],
      });
      const table = await floodgate(p.args('top', '--limit', '1'));
      expect(table.stdout).toBe('#  IDENTIFIER   DENIALS\n1  ip:10.0.0.1  5\n');
    } finally {
      await p.api.close();
      await p.login.close();
    }
  });
});

describe('errors scripts can rely on', () => {
  test('a port nothing listens on: exit 3 within the timeout, one line, no stack trace', async () => {
    const port = await freePort();
    const ran = await floodgateBin(['blocks', '--url', `redis://127.0.0.1:${port}`, '--timeout', '1000']);
    expect(ran.code).toBe(3);
    expect(ran.stderr).toBe(`floodgate: cannot connect to redis://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`);
    expect(ran.stdout).toBe('');
    expect(ran.ms).toBeLessThan(5_000);
  });

  test('REDIS_URL is the default URL, and a password never reaches the output', async () => {
    const port = await freePort();
    const ran = await floodgate(['blocks'], { REDIS_URL: `redis://user:hunter2@127.0.0.1:${port}` });
    expect(ran.code).toBe(3);
    expect(ran.stderr).toContain(`redis://user:***@127.0.0.1:${port}`);
    expect(ran.stderr).not.toContain('hunter2');
  });

  test('a Redis without Floodgate keys under the prefix: exit 4', async () => {
    const prefix = uniquePrefix('empty');
    const ran = await floodgateBin(['blocks', '--url', url, '--prefix', prefix]);
    expect(ran.code).toBe(4);
    expect(ran.stderr).toMatch(new RegExp(`^floodgate: no Floodgate limiters under prefix '${prefix}' on .*wrong --prefix or --url\\?`));
  });

  test.each([
    [['frobnicate'], "unknown command 'frobnicate'"],
    [[], 'no command given'],
    [['inspect'], 'inspect needs an identifier (kind:value), e.g. floodgate inspect ip:203.0.113.7'],
    [['block', 'ip:1'], 'block needs --for <duration>'],
    [['block', 'ip:1', '--for', '10x'], '--for must be a positive whole number'],
    [['blocks', '--reason', 'x'], 'blocks has no option --reason'],
    [['top', '--minutes', '0'], '--minutes must be a whole number from 1 to 60'],
    [['blocks', '--url', 'http://localhost'], 'the scheme must be redis:// or rediss://'],
    [['blocks', '--bogus'], "unknown option '--bogus' (see floodgate blocks --help)"],
  ])('usage error %j: exit 2 before connecting', async (args, message) => {
    const ran = await floodgate(args, { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain(message);
    expect(ran.stderr.split('\n')).toHaveLength(2);
  });

  test('--help: the commands and the exit codes, exit 0', async () => {
    const ran = await floodgateBin(['--help']);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/^Usage: floodgate <command> \[options\]/);
    expect(ran.stdout).toContain('Exit codes: 0 ok, 1 nothing found');
  });
});

describe('the ACL docs/cli.md gives the on-call user', () => {
  const ONCALL_ACL =
    '+info +time +hgetall +get +exists +zrange +zrangebyscore +evalsha +eval +del +mget +hmget +set +pexpire +zadd +zrem +zscore +zremrangebyscore';
  let server: RedisProcess;
  beforeAll(async () => {
    server = await spawnRedis();
    const admin = connect(server.url);
    await admin.call('ACL', 'SETUSER', 'oncall', 'on', '>s3cret', '~floodgate:*', ...ONCALL_ACL.split(' '));
    await admin.call('ACL', 'SETUSER', 'nodel', 'on', '>s3cret', '~floodgate:*', ...ONCALL_ACL.split(' ').filter((c) => c !== '+del'));
    const app = createLimiter({
      ...TEST_DEADLINE,
      redis: admin,
      name: 'api',
      lockout: { after: 1, within: '1m', duration: '1h', scope: 'ip' },
      limits: { limit: 1, window: '1m' },
      logger: quiet,
    });
    await app.check('ip:1');
    await app.check('ip:1');
    await app.close();
    await registered('floodgate', ['api'], admin);
  });
  afterAll(() => server.stop());

  test('is enough for every command', async () => {
    const as = (user: string, ...args: string[]): string[] => [...args, '--url', `redis://${user}:s3cret@127.0.0.1:${server.port}`];
    const codes: Record<string, number | null> = {};
    for (const args of [
      ['limiters'],
      ['inspect', 'ip:1'],
      ['blocks'],
      ['top'],
      ['block', 'ip:2', '--for', '1m'],
      ['unblock', 'ip:2'],
      ['reset', 'ip:1'],
    ]) {
      codes[args[0]!] = (await floodgate(as('oncall', ...args))).code;
    }
    expect(codes).toEqual({ limiters: 0, inspect: 0, blocks: 0, top: 0, block: 0, unblock: 0, reset: 0 });
    // One command short: Redis's error, exit 5.
    const denied = await floodgate(as('nodel', 'unblock', 'ip:1'));
    expect(denied.code).toBe(5);
    expect(denied.stderr).toMatch(/^floodgate: Redis answered with an error: ERR The user executing the script can't run this command/);
    // Under --json, the same error as JSON on stderr (docs/cli.md): code 'redis', exit 5.
    const deniedJson = await floodgate([...as('nodel', 'unblock', 'ip:1'), '--json']);
    expect(deniedJson.code).toBe(5);
    expect(deniedJson.stdout).toBe('');
    expect(JSON.parse(deniedJson.stderr)).toEqual({
      error: { code: 'redis', message: denied.stderr.replace(/^floodgate: /, '').trimEnd(), exit: 5 },
    });
  });
});
