import { createConcurrencyLimiter, createLimiter, type Limiter } from '../../src';
import { manualClock, resetPrefix, testPrefix } from '../../src/testing';
import type { Redis } from 'ioredis';
import { closeClients, keysUnder, connect, uniquePrefix } from '@floodgate/testing';

/*
 * @floodgate/core/testing, as an application's tests use it: time driven by hand (memory and Redis, the
 * block cache included), a prefix per test file, and everything a prefix holds forgotten between tests.
 */
afterAll(closeClients);
const quiet = { warn: () => undefined };

describe.each([
  ['memory', (): Redis | undefined => undefined],
  ['Redis', (): Redis | undefined => connect()],
] as const)('manualClock on the %s store', (_, redisOf) => {
  const limiters: Limiter[] = [];
  afterAll(() => Promise.all(limiters.map((l) => l.close())));
  const make = (clock: () => number, algorithm?: 'fixed-window' | 'token-bucket') => {
    const redis = redisOf();
    const limiter = createLimiter({
      // A deadline no loaded machine misses: a check the failure policy answered would not be counted.
      ...(redis === undefined ? {} : { redis, timeoutMs: 10_000 }),
      prefix: uniquePrefix('clock'),
      algorithm,
      limits: { limit: 2, window: '1m' },
      clock,
      logger: quiet,
    });
    limiters.push(limiter);
    return limiter;
  };

  test.each([['sliding-window'], ['fixed-window'], ['token-bucket']] as const)(
    '%s: a denied client is admitted once the clock passes the window, with no sleeping',
    async (algorithm) => {
      const clock = manualClock();
      const limiter = make(clock.now, algorithm === 'sliding-window' ? undefined : algorithm);
      expect((await limiter.check('ip:1')).allowed).toBe(true);
      expect((await limiter.check('ip:1')).allowed).toBe(true);
      const denied = await limiter.check('ip:1');
      expect(denied.allowed).toBe(false);
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      // The window, and for the sliding window at most one of its 10 buckets more.
      expect(denied.retryAfterMs).toBeLessThanOrEqual(66_000);
      // Still denied a millisecond short of the retry time (the block cache answers on the same clock)...
      clock.advance(denied.retryAfterMs - 1);
      expect((await limiter.check('ip:1')).allowed).toBe(false);
      // ...and admitted at it.
      clock.advance(1);
      expect((await limiter.check('ip:1')).allowed).toBe(true);
    },
  );
});

test('manualClock: a fixed start, advance by ms or a duration, set (backwards too), bad input refused', () => {
  const clock = manualClock();
  expect(clock.now()).toBe(Date.UTC(2030, 0, 1));
  expect(clock.advance(1_500)).toBe(Date.UTC(2030, 0, 1) + 1_500);
  expect(clock.advance('1m')).toBe(Date.UTC(2030, 0, 1) + 61_500);
  expect(clock.advance(0)).toBe(clock.now());
  expect(clock.set(new Date('2031-05-01T00:00:00Z'))).toBe(Date.UTC(2031, 4, 1));
  expect(clock.set(1_000)).toBe(1_000);
  expect(manualClock(new Date(5_000)).now()).toBe(5_000);
  expect(() => clock.advance(-1)).toThrow(/advance/);
  expect(() => clock.advance('soon')).toThrow(/advance/);
  expect(() => manualClock(Number.NaN)).toThrow(/start/);
  expect(() => clock.set(-1)).toThrow(/set/);
});

test('testPrefix: a valid prefix, never the same twice in a process, labelled', () => {
  const made = new Set(Array.from({ length: 2_000 }, () => testPrefix()));
  expect(made.size).toBe(2_000);
  for (const prefix of made) expect(prefix).toMatch(/^test-[a-z0-9]+-[a-z0-9]+-[a-z0-9]+$/);
  const labelled = testPrefix('checkout.v2');
  expect(labelled.startsWith('checkout.v2-')).toBe(true);
  expect(labelled.length).toBeLessThanOrEqual(32);
  // createLimiter takes it as its prefix.
  expect(createLimiter({ prefix: testPrefix('abcdefghijkl'), limits: { limit: 1, window: '1s' } }).prefix).toMatch(/^abcdefghijkl-/);
  expect(() => testPrefix('has space')).toThrow(/label/);
  expect(() => testPrefix('x'.repeat(13))).toThrow(/label/);
});

test('resetPrefix in memory: counts, block cache, manual blocks and leases of the prefix are forgotten; another prefix keeps its own', async () => {
  const prefix = uniquePrefix('reset-mem');
  const other = uniquePrefix('reset-other');
  const a = createLimiter({ prefix, name: 'a', limits: { limit: 1, window: '1h' } });
  const b = createLimiter({ prefix: other, limits: { limit: 1, window: '1h' } });
  const leases = createConcurrencyLimiter({ prefix, max: 1 });
  await a.check('ip:1');
  expect((await a.check('ip:1')).allowed).toBe(false); // now in the block cache too
  await a.block('user:7', { duration: '1h' });
  await b.check('ip:1');
  const held = await leases.lease('ip:1');
  expect(held.granted).toBe(true);
  expect((await leases.lease('ip:1')).granted).toBe(false);

  expect(await resetPrefix(prefix)).toBe(0);

  expect((await a.check('ip:1')).allowed).toBe(true);
  expect((await a.check('user:7')).allowed).toBe(true);
  expect((await leases.lease('ip:1')).granted).toBe(true);
  expect((await b.check('ip:1')).allowed).toBe(false);
  await Promise.all([a.close(), b.close(), leases.close()]);
});

test("resetPrefix: a limiter's own memory store (on a test clock) and its leases' are found by prefix too", async () => {
  const prefix = uniquePrefix('reset-own');
  const clock = manualClock();
  const a = createLimiter({ prefix, limits: { limit: 1, window: '1h' }, clock: clock.now });
  const leases = createConcurrencyLimiter({ prefix, max: 1, clock: clock.now });
  await a.check('ip:1');
  expect((await a.check('ip:1')).allowed).toBe(false);
  expect((await leases.lease('ip:1')).granted).toBe(true);
  expect((await leases.lease('ip:1')).granted).toBe(false);
  await resetPrefix(prefix);
  expect((await a.check('ip:1')).allowed).toBe(true);
  expect((await leases.lease('ip:1')).granted).toBe(true);
  await Promise.all([a.close(), leases.close()]);
});

test('resetPrefix on Redis: every key of the prefix is deleted, and this process forgets its cached denials; other prefixes untouched', async () => {
  const redis = connect();
  const prefix = uniquePrefix('reset-redis');
  const other = uniquePrefix('reset-keep');
  const a = createLimiter({
    redis,
    prefix,
    limits: { limit: 1, window: '1h' },
    lockout: { after: 1, within: '1h', duration: '1h', scope: 'ip' },
  });
  const b = createLimiter({ redis, prefix: other, limits: { limit: 1, window: '1h' } });
  await a.check('ip:1');
  expect((await a.check('ip:1')).allowed).toBe(false);
  expect((await a.check('ip:1')).reason).toBe('blocked'); // locked out: a block key and its index
  await a.block('user:7', { duration: '1h', reason: 'test' });
  await b.check('ip:1');
  const before = await keysUnder(redis, prefix);
  expect(before.length).toBeGreaterThan(3);

  expect(await resetPrefix(prefix, { redis })).toBe(before.length);

  expect(await keysUnder(redis, prefix)).toEqual([]);
  expect((await a.check('ip:1')).allowed).toBe(true);
  expect((await a.check('user:7')).allowed).toBe(true);
  expect((await b.check('ip:1')).allowed).toBe(false);
  await Promise.all([a.close(), b.close()]);
  await resetPrefix(other, { redis });
});

test('resetPrefix refuses what is not a prefix (a pattern could reach other keys)', async () => {
  await expect(resetPrefix('*')).rejects.toThrow(/prefix/);
  await expect(resetPrefix('a:b')).rejects.toThrow(/prefix/);
  await expect(resetPrefix('')).rejects.toThrow(/prefix/);
});
