import { createLimiter, type Limiter } from '@floodgate/core';
import { registryKey } from '@floodgate/core/admin';
import { closeClients, connect, testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { floodgateBin, sleep } from './helpers';

/*
 * An override the application no longer applies (docs/cli.md, "override"): one naming a plan the limiter
 * has since lost, or rules it cannot run, stays in Redis; the application's checks of its identifier run as
 * without it, with a warning. Every verb that shows it says so, with core's reason, and inspect shows the
 * counts the application's checks see. Run through the built bin, as `npx floodgate` runs.
 */
const url = testRedisUrl();
const redis = connect(url);
const warnings: string[] = [];

let prefix: string;
let api: Limiter;
const args = (...a: string[]): string[] => [...a, '--url', url, '--prefix', prefix];
const hash = (): string => `${prefix}:!o:{${prefix}}:api`;

beforeAll(async () => {
  prefix = uniquePrefix('cli-ignored');
  // What an earlier version of the application wrote: a plan 'gold' it had then, and rules in tokens it counted then.
  await redis.hset(hash(), 'user:1', JSON.stringify({ plan: 'gold' }));
  await redis.hset(hash(), 'user:2', JSON.stringify({ limits: [{ limit: 500, window: 60_000, unit: 'tokens' }] }));
  await redis.incr(`${prefix}:!ov:{${prefix}}:api`);
  // The application now: plans free and pro only.
  const plans = { free: { limit: 2, window: '1h' }, pro: { limit: 50, window: '1h' } };
  api = createLimiter({
    redis,
    prefix,
    name: 'api',
    algorithm: 'fixed-window',
    limits: plans,
    overrides: true,
    timeoutMs: 5_000,
    logger: { warn: (m) => warnings.push(m) },
  });
  await api.check('user:1');
  for (let i = 0; i < 100 && (await redis.hlen(registryKey(prefix))) < 1; i++) await sleep(20);
});
afterAll(async () => {
  await api.close();
  await closeClients();
});

const PLAN_GONE = `plan "gold" is not one of this limiter's plans (free, pro)`;

test("the application's own reading: its checks of user:1 run under its plans, with a warning that says why", async () => {
  expect((await api.peek('user:1')).limit).toBe(2);
  expect((await api.peek('user:1', { plan: 'pro' })).limit).toBe(50);
  expect(warnings.some((w) => w.includes(`"user:1" is not applied: ${PLAN_GONE}`))).toBe(true);
  expect(warnings.some((w) => /"user:2" is not applied: its limits are not rules this limiter can apply: .*unit 'tokens'/.test(w))).toBe(
    true,
  );
});

test('inspect: no crash, the override shown as ignored, the counts as the application checks them', async () => {
  const text = await floodgateBin(args('inspect', 'user:1'));
  expect(text.stderr).toBe('');
  expect(text.code).toBe(0);
  expect(text.stdout).toContain(`override in api: plan gold, no expiry; ignored: ${PLAN_GONE}; checks run as without it`);
  // user:1 checked once under the default plan (free): 1 of 2 left; pro's rule shows too.
  expect(text.stdout).toMatch(/^api\s+free\s+2 per 1h\s+1\/2/m);
  expect(text.stdout).toMatch(/^api\s+pro\s+50 per 1h\s+49\/50/m);

  const json = await floodgateBin(args('inspect', 'user:1', '--json'));
  expect(json.code).toBe(0);
  const row = (JSON.parse(json.stdout) as { limiters: { name: string; override: unknown }[] }).limiters.find((l) => l.name === 'api');
  expect(row?.override).toEqual({ plan: 'gold', limits: null, expiresAt: null, expiresAtMs: null, ignored: PLAN_GONE });
});

test('override get and list: shown with what the application does with each', async () => {
  const get = await floodgateBin(args('override', 'get', 'user:1'));
  expect(get.code).toBe(0);
  expect(get.stdout).toMatch(/^LIMITER\s+IDENTIFIER\s+OVERRIDE\s+EXPIRES\s+THE APPLICATION$/m);
  expect(get.stdout).toContain(`ignored: ${PLAN_GONE}; checks run as without it`);

  await api.overrides.set('user:3', { plan: 'pro' });
  const list = await floodgateBin(args('override', 'list', '--json'));
  expect(list.code).toBe(0);
  const rows = (JSON.parse(list.stdout) as { overrides: { identifier: string; ignored: string | null }[] }).overrides;
  expect(rows).toEqual([
    expect.objectContaining({ identifier: 'user:1', ignored: PLAN_GONE }),
    expect.objectContaining({ identifier: 'user:2', ignored: expect.stringMatching(/^its limits are not rules this limiter can apply: /) }),
    expect.objectContaining({ identifier: 'user:3', ignored: null }),
  ]);
  const text = await floodgateBin(args('override', 'list'));
  expect(text.stdout).toMatch(/^api\s+user:3\s+plan pro\s+-\s+applied$/m);
});

test('delete removes it, as any other', async () => {
  const del = await floodgateBin(args('override', 'delete', 'user:1', '--name', 'api'));
  expect(del.code).toBe(0);
  expect(await redis.hexists(hash(), 'user:1')).toBe(0);
});
