import { ArgumentError, ConfigError, createLimiter, type Limiter, type LimiterOptions, type RedisClient } from '@floodgate/core';
import { closeClients, connect, eventually, keysUnder, spawnRedis, storeClient, uniquePrefix } from '@floodgate/testing';
import type { Redis } from 'ioredis';

/*
 * Per-identifier overrides (docs/overrides.md) on a real Redis: set on one limiter, applied by another (a
 * second process) within refreshMs without a restart; plan and limits overrides, expiry, delete, the
 * precedence among a check's identifiers, hostile input, and the bound on distinct rule sets.
 */
let redis: RedisClient;
let plain: Redis;
beforeAll(async () => {
  redis = await storeClient();
  plain = await connect();
});
const open: Limiter[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});
afterAll(closeClients);

const REFRESH_MS = 100;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function make(prefix: string, extra: Partial<LimiterOptions> = {}): Limiter {
  const limiter = createLimiter({
    redis,
    prefix,
    name: 'api',
    algorithm: 'fixed-window',
    failure: 'closed',
    // A shared machine under load: a slow answer is not what these tests are about.
    timeoutMs: 5_000,
    limits: { free: { limit: 2, window: '1h' }, pro: { limit: 50, window: '1h' } },
    overrides: { refreshMs: REFRESH_MS },
    ...extra,
  });
  open.push(limiter);
  return limiter;
}

/** Two limiters of one prefix and name: the application's two processes. */
function pair(): [Limiter, Limiter] {
  const prefix = uniquePrefix('overrides');
  return [make(prefix), make(prefix)];
}

/** The limit `read` answers once it is `expected`, within 10 refreshes (a loaded machine may take more than one). */
const until = (read: () => Promise<number>, expected: number): Promise<number> => eventually(read, expected, REFRESH_MS * 10);

const limitOf = async (limiter: Limiter, ids: string | string[]): Promise<number> => (await limiter.peek(ids)).limit;

test('a plan override set on one process applies in another within refreshMs, without a restart', async () => {
  const [a, b] = pair();
  expect(await limitOf(b, 'user:42')).toBe(2);
  await a.overrides.set('user:42', { plan: 'pro' });
  // The setter's own process at once.
  expect(await limitOf(a, 'user:42')).toBe(50);
  expect(await until(() => limitOf(b, 'user:42'), 50)).toBe(50);
  // Other identifiers keep the default plan, and a check still counts in the identifier's one key.
  expect(await limitOf(b, 'user:7')).toBe(2);
  const d = await b.check('user:42');
  expect(d.allowed).toBe(true);
  expect(d.remaining).toBe(49);
});

test('a limits override: rules of its own, as `limits` takes them, replacing the plan the check names', async () => {
  const [a, b] = pair();
  await a.overrides.set('key:team-7', {
    limits: [
      { limit: 3, window: '1h' },
      { limit: 1000, window: '1d' },
    ],
  });
  expect(await until(async () => (await b.peek('key:team-7', { plan: 'pro' })).limit, 3)).toBe(3);
  for (let i = 0; i < 3; i++) expect((await b.check('key:team-7', { plan: 'pro' })).allowed).toBe(true);
  const denied = await b.check('key:team-7', { plan: 'pro' });
  expect(denied.allowed).toBe(false);
  expect(denied.limit).toBe(3);
  expect(await a.overrides.get('key:team-7')).toEqual({
    identifier: 'key:team-7',
    limits: [
      { limit: 3, window: 3_600_000 },
      { limit: 1000, window: 86_400_000 },
    ],
  });
});

test('an override ends at its expiry in every process; the setter removes it from Redis later', async () => {
  const [a, b] = pair();
  await a.overrides.set('user:1', { plan: 'pro' }, { ttl: '1500ms' });
  expect(await until(() => limitOf(b, 'user:1'), 50)).toBe(50);
  const expiresAt = (await a.overrides.get('user:1'))?.expiresAt ?? 0;
  expect(expiresAt).toBeGreaterThan(Date.now());
  await sleep(expiresAt - Date.now() + 5);
  // No refresh needed: the process checks the expiry itself.
  expect(await limitOf(b, 'user:1')).toBe(2);
  expect(await a.overrides.get('user:1')).toBeUndefined();
  expect(await a.overrides.list()).toEqual([]);
  await a.overrides.set('user:2', { plan: 'pro' });
  expect(await plain.hkeys(`${a.prefix}:!o:{${a.prefix}}:api`)).toEqual(['user:2']);
});

test('delete: every process back to the default plan within refreshMs', async () => {
  const [a, b] = pair();
  await a.overrides.set('user:3', { plan: 'pro' });
  expect(await until(() => limitOf(b, 'user:3'), 50)).toBe(50);
  expect(await a.overrides.delete('user:3')).toBe(true);
  expect(await a.overrides.delete('user:3')).toBe(false);
  expect(await limitOf(a, 'user:3')).toBe(2);
  expect(await until(() => limitOf(b, 'user:3'), 2)).toBe(2);
});

test("several identifiers with overrides: the first in the check's order decides, for the whole check", async () => {
  const [a] = pair();
  await a.overrides.set('ip:10.0.0.1', { plan: 'pro' });
  await a.overrides.set('user:9', { limits: { limit: 7, window: '1h' } });
  const first = await a.peek(['ip:10.0.0.1', 'user:9']);
  expect(first.states.map((s) => s.limit)).toEqual([50, 50]);
  const second = await a.peek(['user:9', 'ip:10.0.0.1']);
  expect(second.states.map((s) => s.limit)).toEqual([7, 7]);
  // An identifier without one beside one with one: the override applies to both.
  expect((await a.peek(['ip:10.0.0.2', 'user:9'])).states.map((s) => s.limit)).toEqual([7, 7]);
  expect(await a.overrides.list()).toEqual([
    { identifier: 'ip:10.0.0.1', plan: 'pro' },
    { identifier: 'user:9', limits: [{ limit: 7, window: 3_600_000 }] },
  ]);
});

test('hostile and invalid input: clear errors, nothing written, no key outside the two of the overrides', async () => {
  const [a] = pair();
  const bad: [unknown, unknown, unknown, new (...args: never[]) => Error, RegExp][] = [
    ['user:\n1', { plan: 'pro' }, undefined, ArgumentError, /control characters/],
    ['user:\u0000', { plan: 'pro' }, undefined, ArgumentError, /control characters/],
    ['user:\ud800', { plan: 'pro' }, undefined, ArgumentError, /control characters/],
    ['x'.repeat(513), { plan: 'pro' }, undefined, ArgumentError, /1 to 512 characters/],
    ['', { plan: 'pro' }, undefined, ArgumentError, /1 to 512 characters/],
    [42, { plan: 'pro' }, undefined, ArgumentError, /1 to 512 characters/],
    ['user:1', { plan: 'gold' }, undefined, ArgumentError, /unknown plan "gold".*known: free, pro/],
    ['user:1', { plan: 'pro', limits: [] }, undefined, ArgumentError, /exactly one of them/],
    ['user:1', { limits: { limit: -1, window: '1m' } }, undefined, ConfigError, /limits/],
    ['user:1', { limits: { limit: 5, window: '1m', unit: 'tokens' } }, undefined, ConfigError, /unit 'tokens'/],
    ['user:1', { plan: 'pro' }, { ttl: 'forever' }, ConfigError, /ttl/],
    ['user:1', { plan: 'pro' }, { ttl: -5 }, ConfigError, /ttl/],
    ['user:1', { plan: 'pro' }, { expires: '1h' }, ArgumentError, /unknown override option 'expires'/],
  ];
  for (const [id, override, options, type, message] of bad) {
    const attempt = a.overrides.set(id as string, override as never, options as never);
    await expect(attempt).rejects.toThrow(type);
    await expect(a.overrides.set(id as string, override as never, options as never)).rejects.toThrow(message);
  }
  expect(await a.overrides.list()).toEqual([]);
  // An identifier that would leave a key's hash tag stays a field of the one hash.
  await a.overrides.set('user:}x{:!b:', { plan: 'pro' });
  expect(await limitOf(a, 'user:}x{:!b:')).toBe(50);
  const keys = (await keysUnder(plain, a.prefix)).sort();
  expect(keys.filter((k) => k.includes(':!o')).sort()).toEqual([`${a.prefix}:!o:{${a.prefix}}:api`, `${a.prefix}:!ov:{${a.prefix}}:api`]);
  expect(keys.every((k) => !k.includes('}x{'))).toBe(true);
});

test('off by default: no read of Redis, and the methods say which option turns them on', async () => {
  const prefix = uniquePrefix('overrides');
  const limiter = make(prefix, { overrides: undefined });
  expect(limiter.overrides.enabled).toBe(false);
  await expect(limiter.overrides.set('user:1', { plan: 'pro' })).rejects.toThrow(/overrides: true/);
  await expect(limiter.overrides.list()).rejects.toThrow(ConfigError);
  // An override another limiter wrote is not read by this one.
  const other = make(prefix);
  await other.overrides.set('user:1', { plan: 'pro' });
  expect(await limitOf(limiter, 'user:1')).toBe(2);
  expect(() => createLimiter({ limits: { limit: 1, window: '1m' }, overrides: { refreshMs: 10 } })).toThrow(/overrides.refreshMs/);
  expect(() => createLimiter({ limits: { limit: 1, window: '1m' }, overrides: { refresh: 1000 } as never })).toThrow(ConfigError);
});

test('at most 256 distinct rule sets: the next is refused at set time, a known one is still accepted', async () => {
  const limiter = createLimiter({ limits: { limit: 1, window: '1h' }, overrides: true, prefix: uniquePrefix('overrides') });
  open.push(limiter);
  for (let i = 0; i < 256; i++) await limiter.overrides.set(`user:${i}`, { limits: { limit: 100 + i, window: '1h' } });
  await expect(limiter.overrides.set('user:x', { limits: { limit: 5, window: '1h' } })).rejects.toThrow(/256 distinct rule sets/);
  await limiter.overrides.set('user:y', { limits: { limit: 100, window: '1h' } });
  // Replacing the only override of a rule set frees its place.
  await limiter.overrides.set('user:255', { limits: { limit: 5, window: '1h' } });
  expect((await limiter.peek('user:255')).limit).toBe(5);
  expect((await limiter.peek('user:y')).limit).toBe(100);
  expect((await limiter.peek('user:254')).limit).toBe(354);
});

test('rule sets past the bound written by another setter: the default plan, with a warning', async () => {
  const prefix = uniquePrefix('overrides');
  const hash = `${prefix}:!o:{${prefix}}:api`;
  const fields: string[] = [];
  for (let i = 0; i < 257; i++) fields.push(`user:${i}`, JSON.stringify({ limits: [{ limit: 100 + i, window: 3_600_000 }] }));
  await plain.hset(hash, ...fields);
  await plain.incr(`${prefix}:!ov:{${prefix}}:api`);
  const warnings: string[] = [];
  const limiter = make(prefix, { logger: { warn: (m) => warnings.push(m) } });
  const limits = await Promise.all(Array.from({ length: 257 }, (_, i) => limitOf(limiter, `user:${i}`)));
  expect(limits.filter((l) => l === 2)).toHaveLength(1);
  expect(warnings.some((w) => /is not applied.*256 distinct rule sets/.test(w))).toBe(true);
  await plain.del(hash, `${prefix}:!ov:{${prefix}}:api`);
});

test('refresh() before any check: reads at once, then keeps refreshing every refreshMs', async () => {
  const [a, b] = pair();
  await b.overrides.refresh();
  await a.overrides.set('user:5', { plan: 'pro' });
  expect(await until(() => limitOf(b, 'user:5'), 50)).toBe(50);
});

test('in memory (no redis): the same API, in this process', async () => {
  const limiter = createLimiter({
    limits: { free: { limit: 2, window: '1h' }, pro: { limit: 50, window: '1h' } },
    overrides: true,
    prefix: uniquePrefix('overrides'),
  });
  open.push(limiter);
  await limiter.overrides.set('user:1', { plan: 'pro' }, { ttl: 60_000 });
  expect((await limiter.check('user:1')).limit).toBe(50);
  expect((await limiter.overrides.get('user:1'))?.plan).toBe('pro');
  expect(await limiter.overrides.delete('user:1')).toBe(true);
  expect((await limiter.check('user:1')).limit).toBe(2);
  await limiter.overrides.set('user:2', { plan: 'pro' }, { ttl: 1 });
  await sleep(5);
  expect((await limiter.check('user:2')).limit).toBe(2);
  await limiter.overrides.set('user:3', { plan: 'pro' });
  expect(await limiter.overrides.list()).toEqual([{ identifier: 'user:3', plan: 'pro' }]);
  expect(await limiter.overrides.delete('user:2')).toBe(false);
});

test('Redis down: the overrides last loaded stay in force, the failure policy running under them', async () => {
  const server = await spawnRedis();
  try {
    const limiter = createLimiter({
      redis: connect(server.url),
      prefix: uniquePrefix('overrides'),
      limits: { free: { limit: 2, window: '1h' }, pro: { limit: 5, window: '1h' } },
      overrides: { refreshMs: REFRESH_MS },
      failure: 'local',
      logger: { warn: () => undefined },
    });
    open.push(limiter);
    await limiter.overrides.set('user:1', { plan: 'pro' });
    expect(await limiter.check('user:1')).toMatchObject({ source: 'redis', limit: 5 });
    await server.kill();
    await sleep(REFRESH_MS * 3);
    const during = [];
    for (let i = 0; i < 6; i++) during.push(await limiter.check('user:1'));
    expect(during.every((d) => d.source !== 'redis')).toBe(true);
    // The local fallback under the override's rules: 5 an hour, not the default plan's 2.
    expect(during.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
    expect((await limiter.check('user:2')).allowed).toBe(true);
  } finally {
    await server.kill().catch(() => undefined);
  }
});

test("reserve() under an override: counted and settled under the override's rules", async () => {
  const prefix = uniquePrefix('overrides');
  const limiter = make(prefix, { refunds: true, limits: { limit: 4, window: '1h' } });
  // Another window than the default plan's: a settle under the wrong plan would give back to another field.
  await limiter.overrides.set('user:1', { limits: { limit: 10, window: '1m' } });
  const reservation = await limiter.reserve('user:1', { cost: 6 });
  expect(reservation.decision).toMatchObject({ allowed: true, limit: 10, remaining: 4 });
  await reservation.settle(2);
  expect(await limiter.peek('user:1', { cost: 0 })).toMatchObject({ limit: 10, remaining: 8 });
});

test("reserve() under an override: the reservation settles by the override plan's units, not the default plan's", async () => {
  const prefix = uniquePrefix('overrides');
  // The default plan counts requests only; 'metered' also counts tokens. A reservation that took the default
  // plan would refuse a settle in tokens (a unit its rules do not count).
  const limiter = make(prefix, {
    refunds: true,
    limits: {
      basic: { limit: 5, window: '1h' },
      metered: [
        { limit: 5, window: '1h' },
        { limit: 1_000, window: '1h', unit: 'tokens' },
      ],
    },
  });
  await limiter.overrides.set('user:1', { plan: 'metered' });
  const reservation = await limiter.reserve('user:1', { cost: { requests: 1, tokens: 600 } });
  expect(reservation.decision.allowed).toBe(true);
  await expect(reservation.settle({ requests: 1, tokens: 150 })).resolves.toBe(true);
  const tokens = (await limiter.peek('user:1', { cost: { requests: 0, tokens: 0 } })).states.find((s) => s.unit === 'tokens');
  expect(tokens?.remaining).toBe(850);
});
