import {
  ArgumentError,
  ConfigError,
  createLimiter,
  StoreError,
  type AlgorithmName,
  type Limiter,
  type LimiterEvent,
  type RedisClient,
} from '@floodgate/core';
import { algorithmTag, encodeIdentifier, keyScheme } from '@floodgate/core/admin';
import { closeClients, connect, storeClient, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

/*
 * reserve(), settle() and cancel() (docs/budgets.md), on Redis and in memory, with every algorithm: the
 * estimate is counted at once, a settle below it gives the difference back, one above it charges the
 * excess past the limit, cancel gives it all back, and each happens at most once.
 */
let redis: RedisClient;
beforeAll(async () => {
  redis = await storeClient();
});
afterAll(closeClients);

// The start of a minute: the fixed window of the tests is whole.
const T0 = 1_700_000_040_000;
let now = T0;
const clock = (): number => now;

function make(where: string, algorithm: AlgorithmName, limit = 10, refunds = true): Limiter {
  const common = { algorithm, limits: { limit, window: '1m', unit: 'tokens' }, clock, refunds, prefix: uniquePrefix('reserve') };
  return where === 'redis'
    ? createLimiter({ ...TEST_DEADLINE, ...common, redis, failure: 'closed', blockCache: false })
    : createLimiter(common);
}

const remaining = async (limiter: Limiter): Promise<number> => (await limiter.peek('user:1', { cost: 0 })).remaining;

beforeEach(() => {
  now = T0;
});

test('reserve() on a limiter without refunds: true rejects with a ConfigError naming refunds', async () => {
  const limiter = make('memory', 'fixed-window', 10, false);
  await expect(limiter.reserve('user:1', { cost: 3 })).rejects.toThrow(ConfigError);
  await expect(limiter.reserve('user:1', { cost: 3 })).rejects.toThrow(/refunds: true/);
});

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('%s', (algorithm) => {
  describe.each(['redis', 'memory'])('on %s', (where) => {
    test('the estimate is counted at once; a settle below it gives the difference back', async () => {
      const limiter = make(where, algorithm);
      try {
        const r = await limiter.reserve('user:1', { cost: 6 });
        expect(r.decision.allowed).toBe(true);
        expect(await remaining(limiter)).toBe(4);
        // A second estimate that does not fit beside the first is denied: nothing is counted for it.
        const denied = await limiter.reserve('user:1', { cost: 5 });
        expect(denied.decision.allowed).toBe(false);
        expect(await denied.settle(2)).toBe(false);
        expect(await r.settle(2)).toBe(true);
        expect(await remaining(limiter)).toBe(8);
        // At most once: a second settle, or a cancel after it, has nothing left to settle.
        expect(await r.settle(0)).toBe(false);
        expect(await r.cancel()).toBe(false);
        expect(await remaining(limiter)).toBe(8);
      } finally {
        await limiter.close();
      }
    });

    test('a settle above the estimate charges the excess past the limit, and the identifier stays denied until it is paid off', async () => {
      const limiter = make(where, algorithm);
      try {
        const r = await limiter.reserve('user:1', { cost: 4 });
        expect(await r.settle(25)).toBe(true);
        expect(await remaining(limiter)).toBe(0);
        expect((await limiter.check('user:1', { cost: 1 })).allowed).toBe(false);
        // 25 against 10 a minute: the 15 past the limit are paid off at the limit's rate, 1.5 windows after
        // the window lets go of the charge, however many windows that takes (a debt is never forgotten
        // with the window it was charged in).
        now += 30_000;
        expect((await limiter.check('user:1', { cost: 1 })).allowed).toBe(false);
        now += 61_000;
        expect((await limiter.check('user:1', { cost: 1 })).allowed).toBe(false);
        now = T0 + 160_000;
        expect((await limiter.check('user:1', { cost: 1 })).allowed).toBe(true);
      } finally {
        await limiter.close();
      }
    });

    test('cancel() gives the whole estimate back, once', async () => {
      const limiter = make(where, algorithm);
      try {
        const r = await limiter.reserve('user:1', { cost: 7 });
        expect(await remaining(limiter)).toBe(3);
        const [a, b] = await Promise.all([r.cancel(), r.cancel()]);
        expect([a, b].filter(Boolean)).toHaveLength(1);
        expect(await remaining(limiter)).toBe(10);
        expect(await r.settle(1)).toBe(false);
      } finally {
        await limiter.close();
      }
    });

    test('a settle after a reset gives nothing back (the key incarnation), though the charge still counts', async () => {
      const limiter = make(where, algorithm);
      try {
        const old = await limiter.reserve('user:1', { cost: 5 });
        await limiter.reset('user:1');
        await limiter.check('user:1', { cost: 5 });
        expect(await old.settle(0)).toBe(true);
        // 5 of 10 stay counted: the old estimate was never in this life of the key.
        expect(await remaining(limiter)).toBe(5);
      } finally {
        await limiter.close();
      }
    });

    test('a reservation never settled keeps its estimate', async () => {
      const limiter = make(where, algorithm);
      try {
        await limiter.reserve('user:1', { cost: 9 });
        expect(await remaining(limiter)).toBe(1);
        expect((await limiter.reserve('user:1', { cost: 2 })).decision.allowed).toBe(false);
      } finally {
        await limiter.close();
      }
    });
  });
});

test('settle(actual) is validated as a cost, before anything is forgotten', async () => {
  const limiter = createLimiter({
    limits: [
      { limit: 5, window: '1m' },
      { limit: 100, window: '1m', unit: 'tokens' },
    ],
    refunds: true,
    prefix: uniquePrefix('reserve'),
  });
  const r = await limiter.reserve('user:1', { cost: { requests: 1, tokens: 50 } });
  await expect(r.settle({ requests: 1 })).rejects.toThrow(/leaves out the unit 'tokens'/);
  await expect(r.settle(-1)).rejects.toThrow(/settle\(actual\)/);
  // Per unit: requests as estimated, tokens less (given back) in one call.
  expect(await r.settle({ requests: 1, tokens: 20 })).toBe(true);
  expect((await limiter.peek('user:1', { cost: 0 })).states.map((s) => s.remaining)).toEqual([4, 80]);
});

test('a settle at no cost (undefined, null) rejects as any invalid cost, and every failed settle is a settle-failed event', async () => {
  const events: LimiterEvent[] = [];
  const prefix = uniquePrefix('reserve');
  const limiter = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix,
    algorithm: 'fixed-window',
    limits: { limit: 100, window: '1m', unit: 'tokens' },
    refunds: true,
    clock,
    failure: 'closed',
    onEvent: (e) => void events.push(e),
  });
  try {
    for (const nothing of [undefined, null]) {
      const r = await limiter.reserve('user:1', { cost: 30 });
      // Nothing is not the default cost of 1 a check has: the estimate stays counted.
      await expect(r.settle(nothing as unknown as number)).rejects.toThrow(/settle\(actual\) needs the actual cost.*got (undefined|null)/);
      await expect(r.settle(-1)).rejects.toThrow(ArgumentError);
    }
    expect(await remaining(limiter)).toBe(40);
    // A settle the store cannot take (its state key is not a hash any more): the estimate stays too.
    const r = await limiter.reserve('user:2', { cost: 5 });
    const key = keyScheme(prefix, 'default', algorithmTag('fixed-window')!, false).state(encodeIdentifier('user:2'));
    const raw = connect();
    await raw.del(key);
    await raw.sadd(key, 'x');
    await expect(r.settle(1)).rejects.toThrow(StoreError);
    const failed = events.filter((e) => e.type === 'settle-failed');
    expect(failed.map((e) => e.reason)).toEqual(['invalid', 'invalid', 'invalid', 'invalid', 'store']);
    expect(failed[0]).toEqual({ type: 'settle-failed', limiter: 'default', reason: 'invalid', cost: 30, kinds: ['user'] });
  } finally {
    await limiter.close();
  }
});
