import { createLimiter, type LimiterOptions } from '@floodgate/core';
import { closeClients, commandStats, connect, spawnRedis, uniquePrefix, type RedisProcess, TEST_DEADLINE } from '@floodgate/testing';

const quiet = { warn: () => undefined };
let redis: RedisProcess;
beforeAll(async () => {
  redis = await spawnRedis();
});
afterAll(async () => {
  await closeClients();
  await redis.stop();
});

function limiter(extra: Partial<LimiterOptions> = {}) {
  return createLimiter({
    ...TEST_DEADLINE,
    algorithm: 'fixed-window',
    redis: connect(redis.url),
    prefix: uniquePrefix('bc'),
    limits: { limit: 5, window: '1h' },
    logger: quiet,
    ...extra,
  });
}

const scripts = (s: Record<string, number>): number => (s.evalsha ?? 0) + (s.eval ?? 0);

test('a blocked client hammering 10,000 times sends no further command to Redis', async () => {
  const admin = connect(redis.url);
  const l = limiter();
  for (let i = 0; i < 5; i++) expect((await l.check('ip:1')).allowed).toBe(true);
  expect(await l.check('ip:1')).toMatchObject({ allowed: false, source: 'redis', reason: 'limit' });
  const before = await commandStats(admin);
  for (let i = 0; i < 10_000; i++) {
    const d = await l.check('ip:1');
    if (d.allowed || d.source !== 'cache' || d.retryAfterMs <= 0) throw new Error(`check ${i}: ${JSON.stringify(d)}`);
  }
  const after = await commandStats(admin);
  // INFO itself is the only command between the two readings (the admin client's own).
  expect(scripts(after) - scripts(before)).toBe(0);
  expect((after.info ?? 0) - (before.info ?? 0)).toBe(1);
});

test('a denial is answered from the cache for the cost that was denied only: its retry time is exact', async () => {
  const l = limiter({ algorithm: 'sliding-log', limits: { limit: 10, window: '1h' } });
  expect((await l.check('u', { cost: 8 })).allowed).toBe(true);
  const denied = await l.check('u', { cost: 5 });
  expect(denied).toMatchObject({ allowed: false, source: 'redis', remaining: 2 });
  expect(await l.check('u', { cost: 5 })).toMatchObject({ allowed: false, source: 'cache', reason: 'limit', remaining: 2 });
  // A larger cost may need longer than the cached retry time, a smaller one may fit: both ask Redis.
  expect(await l.check('u', { cost: 6 })).toMatchObject({ allowed: false, source: 'redis' });
  expect(await l.check('u', { cost: 0 })).toMatchObject({ allowed: true, source: 'redis' });
  expect(await l.check('u', { cost: 2 })).toMatchObject({ allowed: true, source: 'redis', remaining: 0 });
  expect(await l.check('u')).toMatchObject({ allowed: false, source: 'redis' });
  expect(await l.check('u')).toMatchObject({ allowed: false, source: 'cache' });
  expect(await l.check(['other', 'u'])).toMatchObject({ allowed: false, source: 'cache', identifier: 'u' });
});

test('expiry follows the limiter clock: after the retry time Redis decides again', async () => {
  let now = Date.UTC(2030, 0, 1);
  const l = limiter({ limits: { limit: 1, window: '1m' }, clock: () => now });
  await l.check('c');
  const denied = await l.check('c');
  expect(denied).toMatchObject({ allowed: false, source: 'redis', retryAfterMs: 60_000 });
  now += 59_000;
  expect(await l.check('c')).toMatchObject({ allowed: false, source: 'cache', retryAfterMs: 1_000 });
  now += 1_000;
  expect(await l.check('c')).toMatchObject({ allowed: true, source: 'redis' });
});

test('unblock and reset evict the cached denials of every limiter they concern', async () => {
  const prefix = uniquePrefix('evict');
  const a = limiter({ prefix, name: 'a', limits: { limit: 1, window: '1h' } });
  const b = limiter({ prefix, name: 'b', limits: { limit: 1, window: '1h' } });
  const b2 = limiter({ prefix, name: 'b', limits: { limit: 1, window: '1h' } });
  await a.block('ip:9', { duration: '1h', reason: 'abuse' });
  for (const l of [a, b]) {
    expect(await l.check('ip:9')).toMatchObject({ allowed: false, source: 'redis', reason: 'blocked' });
    expect(await l.check('ip:9', { cost: 0 })).toMatchObject({ allowed: false, source: 'cache', blockReason: 'abuse' });
  }
  await a.unblock('ip:9');
  expect(await b.check('ip:9')).toMatchObject({ allowed: true, source: 'redis' });
  expect(await b2.check('ip:9')).toMatchObject({ allowed: false, source: 'redis', reason: 'limit' });
  expect(await b2.check('ip:9')).toMatchObject({ source: 'cache' });
  await b.reset('ip:9');
  expect(await b2.check('ip:9')).toMatchObject({ allowed: true, source: 'redis' });
});

test('a cached manual block is re-checked within a second (another process may lift it)', async () => {
  let now = Date.UTC(2030, 0, 1);
  const raw = connect(redis.url);
  const l = limiter({ clock: () => now });
  await l.block('ip:7', { duration: '1h' });
  expect(await l.check('ip:7')).toMatchObject({ source: 'redis', reason: 'blocked' });
  now += 999;
  expect(await l.check('ip:7')).toMatchObject({ source: 'cache', reason: 'blocked' });
  await raw.del(`${l.prefix}:!b:{ip:7}`);
  now += 1;
  expect(await l.check('ip:7')).toMatchObject({ allowed: true, source: 'redis' });
});

test('penalty: true asks Redis for every check (a denied check must count)', async () => {
  const l = limiter({ limits: { limit: 1, window: '1h' }, penalty: true });
  await l.check('s');
  for (let i = 0; i < 3; i++) expect((await l.check('s')).source).toBe('redis');
});

test('shadow mode answers a would-be-denied client from the cache too, allowed and reported: Redis counts the same as when enforcing', async () => {
  const events: string[] = [];
  const l = limiter({ limits: { limit: 1, window: '1h' }, mode: 'shadow', onEvent: (e) => events.push(e.type) });
  await l.check('s');
  expect(await l.check('s')).toMatchObject({ allowed: true, shadowDenied: true, source: 'redis' });
  for (let i = 0; i < 3; i++) expect(await l.check('s')).toMatchObject({ allowed: true, shadowDenied: true, source: 'cache' });
  expect(events.filter((t) => t === 'shadow-deny')).toHaveLength(4);
  expect(events.filter((t) => t === 'decision')).toHaveLength(5);
});

test('the cache is a bounded LRU', async () => {
  const l = limiter({ limits: { limit: 1, window: '1h' }, blockCache: { max: 2 } });
  for (const id of ['x', 'y', 'z']) {
    await l.check(id);
    expect((await l.check(id)).source).toBe('redis');
  }
  expect((await l.check('z')).source).toBe('cache');
  expect((await l.check('y')).source).toBe('cache');
  expect((await l.check('x')).source).toBe('redis');
});
