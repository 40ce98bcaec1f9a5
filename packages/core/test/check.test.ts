import { createLimiter, type Limiter, type LimiterOptions, type RedisClient } from '@floodgate/core';
import { manualClock } from '@floodgate/core/testing';
import { encodeIdentifier } from '../src/scripts/keys';
import { closeClients, keysUnder, connect, startRedis, storeClient, uniquePrefix, windowClearOfBoundary } from '@floodgate/testing';

// The limiters' client is the one under test (FLOODGATE_CLIENT, jest.config.ts); the test's own commands use ioredis.
const redis = connect();
let store: RedisClient;
beforeAll(async () => {
  store = await storeClient();
});
const limiters: Limiter[] = [];
afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await closeClients();
});

/*
 * A clock half-way through an hour, held still unless a test moves it: a fixed window on the real clock
 * could turn between two checks of a test (at the top of the hour, every window does), and hand out a
 * second window's budget. The test of the keys' lives in Redis runs on Redis's TIME.
 */
const halfPast = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 1_800_000;

function make(options: Partial<LimiterOptions> & Pick<LimiterOptions, 'limits'>): Limiter {
  const limiter = createLimiter({
    redis: store,
    prefix: uniquePrefix('check'),
    algorithm: 'fixed-window',
    failure: 'closed',
    timeoutMs: 5000,
    clock: () => halfPast,
    ...options,
  });
  limiters.push(limiter);
  return limiter;
}

test('1,000 concurrent checks with limit 100 admit exactly 100', async () => {
  const limiter = make({ limits: { limit: 100, window: '1h' } });
  const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.check('ip:198.51.100.1')));
  expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
  // Past the first denial, the rest are answered from the block cache (no more than the limit's worth of
  // units is ever in flight for one identifier: see engine/inflight.ts).
  expect(new Set(decisions.map((d) => d.source))).toEqual(new Set(['redis', 'cache']));
  const denied = decisions.find((d) => !d.allowed && d.source === 'redis')!;
  expect(denied).toMatchObject({ reason: 'limit', remaining: 0, limit: 100, windowMs: 3_600_000 });
  expect(denied.retryAfterMs).toBeGreaterThan(0);
  expect(denied.retryAfterMs).toBe(denied.resetMs);
});

test('every rule x every identifier: the binding pair and remaining after consuming', async () => {
  // Half-way through the hour (make's clock): in its last minute the hourly window's retry would be
  // shorter than a minute and the assertion below would not hold.
  const limiter = make({
    limits: [
      { limit: 3, window: '1m' },
      { limit: 5, window: '1h' },
      { limit: 2, window: '1h', for: 'user' },
    ],
  });
  const ids = ['ip:203.0.113.7', 'user:42'];
  const first = await limiter.check(ids);
  expect(first.allowed).toBe(true);
  // 2 rules for the ip, 3 for the user (the user-only rule applies to user: ids only).
  expect(first.states.map((s) => [s.identifier, s.limit, s.remaining])).toEqual([
    ['ip:203.0.113.7', 3, 2],
    ['ip:203.0.113.7', 5, 4],
    ['user:42', 3, 2],
    ['user:42', 5, 4],
    ['user:42', 2, 1],
  ]);
  expect(first).toMatchObject({ identifier: 'user:42', limit: 2, remaining: 1, retryAfterMs: 0 });

  expect((await limiter.check(ids)).allowed).toBe(true);
  const third = await limiter.check(ids);
  expect(third).toMatchObject({ allowed: false, reason: 'limit', identifier: 'user:42', limit: 2, remaining: 0 });
  // The denying pair with the longest wait binds: the hourly user rule, not the minute rule.
  expect(third.retryAfterMs).toBeGreaterThan(60_000);
  expect(third.retryAfterMs).toBe(Math.max(...third.states.filter((s) => !s.allowed).map((s) => s.retryAfterMs)));
});

test('a denied check consumes nothing: the other identifier keeps its remaining', async () => {
  const limiter = make({
    limits: [
      { limit: 2, window: '1h', for: 'user' },
      { limit: 10, window: '1h', for: 'ip' },
    ],
  });
  await limiter.check(['user:1', 'ip:10.0.0.1']);
  await limiter.check(['user:1', 'ip:10.0.0.2']);
  const before = await limiter.peek('ip:10.0.0.1');
  const denied = await limiter.check(['user:1', 'ip:10.0.0.1']);
  expect(denied.allowed).toBe(false);
  const after = await limiter.peek('ip:10.0.0.1');
  expect(before.remaining).toBe(9);
  expect(after.remaining).toBe(9);
});

test('peek consumes nothing and reports the same shape', async () => {
  const limiter = make({ limits: { limit: 3, window: '1h' } });
  await limiter.check('ip:1.1.1.1');
  const peeks = await Promise.all([1, 2, 3, 4].map(() => limiter.peek('ip:1.1.1.1')));
  expect(peeks.map((p) => p.remaining)).toEqual([2, 2, 2, 2]);
  expect(peeks[0]).toMatchObject({ allowed: true, source: 'redis', limit: 3 });
  expect((await limiter.peek('ip:1.1.1.1', { cost: 3 })).allowed).toBe(false);
});

test('cost: k units at once, 0 consumes nothing, more than the limit is denied with reason limit', async () => {
  const limiter = make({ limits: { limit: 5, window: '1h' } });
  expect(await limiter.check('ip:2.2.2.2', { cost: 3 })).toMatchObject({ allowed: true, remaining: 2 });
  expect(await limiter.check('ip:2.2.2.2', { cost: 3 })).toMatchObject({ allowed: false, remaining: 2, reason: 'limit' });
  expect(await limiter.check('ip:2.2.2.2', { cost: 0 })).toMatchObject({ allowed: true, remaining: 2 });
  expect(await limiter.check('ip:2.2.2.2', { cost: 2 })).toMatchObject({ allowed: true, remaining: 0 });
  expect(await limiter.check('ip:2.2.2.2', { cost: 0 })).toMatchObject({ allowed: true, remaining: 0 });
  const huge = await limiter.check('ip:3.3.3.3', { cost: 6 });
  expect(huge).toMatchObject({ allowed: false, reason: 'limit', remaining: 5 });
  expect(huge.retryAfterMs).toBeGreaterThan(0);
});

test('duplicate identifiers count once', async () => {
  const limiter = make({ limits: { limit: 4, window: '1h' } });
  const d = await limiter.check(['ip:4.4.4.4', 'ip:4.4.4.4', 'ip:4.4.4.4']);
  expect(d.states).toHaveLength(1);
  expect(d.remaining).toBe(3);
});

test('every key written has a TTL no longer than its longest window', async () => {
  // Redis's TIME, not a test clock (whose keys live 10 minutes longer): the lives are the subject. The hour
  // is one that began minutes ago: an hour ending as the test runs would leave a key a few ms to live.
  const [seconds] = await redis.time();
  const hour = windowClearOfBoundary(Number(seconds) * 1000);
  const limiter = make({
    limits: [
      { limit: 5, window: '1s' },
      { limit: 50, window: hour },
    ],
    clock: undefined,
  });
  await limiter.check(['ip:5.5.5.5', 'user:5']);
  await limiter.block('ip:6.6.6.6', { duration: '10m' });
  // The limiter's registry entry (for the command line, kept 30 days from its last write) aside: two state
  // keys, the block and the block index of its slot.
  const keys = (await keysUnder(redis, limiter.prefix)).filter((k) => !k.includes(':!m:'));
  expect(keys).toHaveLength(4);
  for (const key of keys) {
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(hour);
  }
});

test('reset forgets the counts of the given identifiers only', async () => {
  const limiter = make({ limits: { limit: 2, window: '1h' } });
  await limiter.check(['ip:7.7.7.7', 'ip:8.8.8.8']);
  await limiter.reset('ip:7.7.7.7');
  expect((await limiter.peek('ip:7.7.7.7')).remaining).toBe(2);
  expect((await limiter.peek('ip:8.8.8.8')).remaining).toBe(1);
});

test('a check succeeds right after SCRIPT FLUSH (NOSCRIPT is recovered by EVAL)', async () => {
  // SCRIPT FLUSH empties the whole server's script cache: a server of its own, not the shared one.
  const server = await startRedis();
  try {
    const own = await storeClient(server.url);
    const limiter = make({ redis: own, limits: { limit: 10, window: '1h' } });
    expect((await limiter.check('ip:9.9.9.9')).source).toBe('redis');
    await connect(server.url).script('FLUSH');
    const after = await limiter.check('ip:9.9.9.9');
    expect(after).toMatchObject({ allowed: true, source: 'redis', remaining: 8 });
    await limiter.close();
  } finally {
    await server.stop();
  }
});

describe('manual blocks', () => {
  test('apply to every limiter with the same prefix, in the same script call, and lift', async () => {
    const prefix = uniquePrefix('block');
    const a = make({ prefix, name: 'a', limits: { limit: 10, window: '1h' } });
    const b = make({ prefix, name: 'b', limits: { limit: 10, window: '1m' } });
    await a.block('ip:203.0.113.9', { duration: '10m', reason: 'abuse' });
    for (const limiter of [a, b]) {
      const d = await limiter.check(['ip:203.0.113.9', 'user:9']);
      expect(d).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'abuse', identifier: 'ip:203.0.113.9', remaining: 0 });
      expect(d.retryAfterMs).toBeGreaterThan(9 * 60_000);
      expect(d.retryAfterMs).toBeLessThanOrEqual(10 * 60_000);
    }
    // A blocked check consumed nothing, for either identifier.
    expect((await a.peek('user:9')).remaining).toBe(10);
    // Even cost 0 is refused while blocked.
    expect((await a.check('ip:203.0.113.9', { cost: 0 })).allowed).toBe(false);
    await b.unblock('ip:203.0.113.9');
    expect(await a.check(['ip:203.0.113.9', 'user:9'])).toMatchObject({ allowed: true, remaining: 9 });
  });

  test('a block ends by its stored end time', async () => {
    const clock = manualClock(halfPast);
    const limiter = make({ limits: { limit: 10, window: '1h' }, clock: clock.now });
    await limiter.block('user:short', { duration: 150 });
    expect((await limiter.check('user:short')).reason).toBe('blocked');
    clock.advance(149);
    expect((await limiter.check('user:short')).reason).toBe('blocked');
    clock.advance(1);
    expect((await limiter.check('user:short')).allowed).toBe(true);
  });

  test('a block in another prefix does not apply', async () => {
    const a = make({ limits: { limit: 10, window: '1h' } });
    const b = make({ limits: { limit: 10, window: '1h' } });
    await a.block('ip:1.0.0.1', { duration: '1m' });
    expect((await b.check('ip:1.0.0.1')).allowed).toBe(true);
  });
});

describe('hostile identifiers', () => {
  const hostile = [
    'x'.repeat(10_000),
    'a{b}c',
    '}',
    '{',
    '{}',
    'user:{42}',
    'ip:1:2:3',
    'a\u0000b',
    'a\u0000c',
    '😀',
    '😀😀',
    '\ud800',
    '\ud801',
    'ip:#x',
    '#',
    'a'.repeat(64),
    'a'.repeat(65),
    'ip:1.2.3.4\r\nDEL *',
    '*',
    '?',
    'user:42 ',
  ];

  test('neither fail nor collide, and no key exceeds 200 bytes or leaves its hash tag', async () => {
    const limiter = make({
      name: 'n'.repeat(48),
      prefix: uniquePrefix('hostile').padEnd(32, 'p').slice(0, 32),
      limits: { limit: 2, window: '1h' },
    });
    for (const id of hostile) {
      const d = await limiter.check(id);
      expect(d).toMatchObject({ allowed: true, source: 'redis', remaining: 1 });
    }
    // Each identifier has its own counter: the second check of each leaves 0, a third is denied.
    for (const id of hostile) expect((await limiter.check(id)).remaining).toBe(0);
    for (const id of hostile) expect((await limiter.check(id)).allowed).toBe(false);
    // The state keys (the registry and the denial sample are the prefix's, not an identifier's).
    const keys = (await keysUnder(redis, limiter.prefix)).filter((k) => !k.includes(':!m:') && !k.includes(':!t:'));
    expect(keys).toHaveLength(new Set(hostile.map(encodeIdentifier)).size);
    expect(keys).toHaveLength(hostile.length);
    for (const key of keys) {
      expect(Buffer.byteLength(key)).toBeLessThanOrEqual(200);
      expect(key.match(/[{}]/g)).toEqual(['{', '}']);
      expect(key.endsWith('}')).toBe(true);
    }
  });

  test('blocks of hostile identifiers stay their own', async () => {
    const limiter = make({ limits: { limit: 5, window: '1h' } });
    await limiter.block('\ud800', { duration: '1m', reason: 'r|with|bars' });
    expect(await limiter.check('\ud800')).toMatchObject({ reason: 'blocked', blockReason: 'r|with|bars' });
    expect((await limiter.check('\ud801')).allowed).toBe(true);
    expect((await limiter.check('\ufffd')).allowed).toBe(true);
  });
});
