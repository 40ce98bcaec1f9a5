import { createLimiter, type Limiter } from '@floodgate/core';
import { registryKey } from '@floodgate/core/admin';
import { closeClients, connect, eventually, testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { floodgate, floodgateBin, floodgateJson, sleep } from './helpers';

/*
 * `floodgate override` end to end on the test Redis (docs/overrides.md): what it sets, a running
 * application's limiter applies within refreshMs; inspect shows it; its errors are usage errors (exit 2)
 * checked by the same code as limiter.overrides.set().
 */
afterAll(closeClients);
const url = testRedisUrl();
const redis = connect(url);
const quiet = { warn: () => undefined };

let prefix: string;
let api: Limiter;
let login: Limiter;
const args = (...a: string[]): string[] => [...a, '--url', url, '--prefix', prefix];

beforeAll(async () => {
  prefix = uniquePrefix('cli-override');
  api = createLimiter({
    redis,
    prefix,
    name: 'api',
    algorithm: 'fixed-window',
    limits: { free: { limit: 2, window: '1h' }, pro: { limit: 50, window: '1h' } },
    overrides: { refreshMs: 100 },
    failure: 'closed',
    timeoutMs: 5_000,
    logger: quiet,
  });
  login = createLimiter({ redis, prefix, name: 'login', limits: { limit: 5, window: '15m' }, logger: quiet });
  await api.check('user:0');
  await login.check('user:0');
  for (let i = 0; i < 100 && (await redis.hlen(registryKey(prefix))) < 2; i++) await sleep(20);
});
afterAll(async () => {
  await api.close();
  await login.close();
});

test('set --plan with --ttl: the running limiter applies it within refreshMs; get, list and inspect show it', async () => {
  const set = await floodgate(args('override', 'set', 'user:42', '--plan', 'pro', '--ttl', '1h'));
  expect(set.stderr).toBe('');
  expect(set.code).toBe(0);
  expect(set.stdout).toMatch(/^override of user:42 in api: plan pro, until \d{4}-\d\d-\d\dT\S+Z \(in (59m \d+s|1h)\)\n$/);
  expect(await eventually(async () => (await api.peek('user:42')).limit, 50, 1_000)).toBe(50);
  const d = await api.check('user:42');
  expect([d.allowed, d.limit, d.remaining]).toEqual([true, 50, 49]);

  const { code, json } = await floodgateJson<{ overrides: { limiter: string; identifier: string; plan: string; expiresAtMs: number }[] }>(
    args('override', 'get', 'user:42'),
  );
  expect(code).toBe(0);
  expect(json.overrides).toEqual([expect.objectContaining({ limiter: 'api', identifier: 'user:42', plan: 'pro', limits: null })]);
  expect(json.overrides[0]!.expiresAtMs - Date.now()).toBeGreaterThan(3_590_000);

  const inspect = await floodgateJson<{
    limiters: { name: string; override: { plan: string } | null; rules: { limit: number; remaining: number }[] }[];
  }>(args('inspect', 'user:42'));
  expect(inspect.code).toBe(0);
  const row = inspect.json.limiters.find((l) => l.name === 'api')!;
  expect(row.override).toMatchObject({ plan: 'pro' });
  expect(row.rules.map((r) => [r.limit, r.remaining])).toEqual([[50, 49]]);
  const text = await floodgate(args('inspect', 'user:42'));
  expect(text.stdout).toMatch(/^override in api: plan pro, until \S+ \(in /m);
  expect(text.stdout).toMatch(/^api\s+pro\s+50 per 1h\s+49\/50/m);
});

test('set --limits, list, delete: exit codes 0 and 1 as the other commands give them', async () => {
  const set = await floodgateJson<{ limits: { limit: number; window: number }[]; expiresAt: string | null }>(
    args('override', 'set', 'key:team-7', '--limits', '3/1h, 1000/1d'),
  );
  expect(set.code).toBe(0);
  expect(set.json).toMatchObject({
    limits: [
      { limit: 3, window: 3_600_000 },
      { limit: 1000, window: 86_400_000 },
    ],
    expiresAt: null,
  });
  const list = await floodgate(args('override', 'list'));
  expect(list.code).toBe(0);
  expect(list.stdout).toMatch(/^LIMITER\s+IDENTIFIER\s+OVERRIDE\s+EXPIRES\s+THE APPLICATION$/m);
  expect(list.stdout).toMatch(/^api\s+key:team-7\s+limits 3\/1h, 1000\/1d\s+-\s+applied$/m);
  expect(await eventually(async () => (await api.peek('key:team-7')).limit, 3, 1_000)).toBe(3);

  expect((await floodgate(args('override', 'delete', 'key:team-7'))).stdout).toBe('deleted the override of key:team-7 in api\n');
  const again = await floodgateJson(args('override', 'delete', 'key:team-7'));
  expect(again).toEqual({ code: 1, json: { limiter: 'api', identifier: 'key:team-7', deleted: false } });
  expect((await floodgate(args('override', 'get', 'key:team-7'))).code).toBe(1);
  expect(await eventually(async () => (await api.peek('key:team-7')).limit, 2, 1_000)).toBe(2);
});

test.each<[string[], RegExp]>([
  [['override', 'set', 'user:1', '--plan', 'gold'], /unknown plan "gold" for an override \(known: free, pro\)/],
  [['override', 'set', 'user:1'], /override set needs --plan <plan> or --limits <rules>, one of them/],
  [['override', 'set', 'user:1', '--plan', 'pro', '--limits', '5/1m'], /one of them/],
  [['override', 'frob'], /unknown override subcommand 'frob'/],
  [['override', 'lst'], /did you mean 'list'\?/],
  [['override'], /override needs one of set, get, delete, list/],
  [['override', 'get', 'user:1', '--ttl', '1h'], /--ttl is an option of 'override set'/],
  [['override', 'set', 'user:1', '--plan', 'pro', '--ttl', 'forever'], /--ttl must/],
  [['override', 'set', 'user:1', '--limits', '3/1x'], /--limits rule 1 \('3\/1x'\)/],
  [['override', 'set', 'user:1', '--limits', '3'], /--limits rule 1 \('3'\) is not a rule/],
  [['override', 'set', 'user:\u0001', '--plan', 'pro'], /control characters/],
  [['override', 'set', 'user:1', '--plan', 'pro', '--name', 'login'], /limiter 'login' does not read overrides/],
  [['override', 'list', 'user:1'], /override list takes no identifier/],
  [['override', 'get', '203.0.113.7'], /has no kind: did you mean ip:203.0.113.7\?/],
])('floodgate %j: a usage error (exit 2)', async (argv, message) => {
  const ran = await floodgate(args(...argv));
  expect(ran.stdout).toBe('');
  expect(ran.stderr).toMatch(message);
  expect(ran.code).toBe(2);
  expect(await api.overrides.get('user:1')).toBeUndefined();
});

test('--name that names no limiter of the prefix exits 1', async () => {
  const ran = await floodgate(args('override', 'list', '--name', 'nope'));
  expect(ran.code).toBe(1);
  expect(ran.stderr).toMatch(/no limiter named 'nope'/);
});

test('the built binary: override --help and override list --json', async () => {
  const help = await floodgateBin(['override', '--help']);
  expect(help.code).toBe(0);
  expect(help.stdout).toMatch(/^Usage: floodgate override set <identifier> \(--plan <plan> \| --limits <rules>\)/);
  expect(help.stdout).toContain('--ttl <duration>');
  await api.overrides.set('user:bin', { plan: 'pro' });
  const list = await floodgateBin(args('override', 'list', '--json'));
  expect(list.code).toBe(0);
  expect((JSON.parse(list.stdout) as { overrides: unknown[] }).overrides).toContainEqual({
    limiter: 'api',
    identifier: 'user:bin',
    plan: 'pro',
    limits: null,
    expiresAt: null,
    expiresAtMs: null,
    ignored: null,
  });
  await api.overrides.delete('user:bin');
});
