import { createLimiter, type AlgorithmName, type Limiter } from '@floodgate/core';
import { closeClients, connect, keysUnder, storeClient, uniquePrefix } from '@floodgate/testing';

/*
 * What a low estimate buys (docs/budgets.md, docs/security.md), mounted on every algorithm, on a real
 * redis-server and in memory, on a clock the test moves:
 *   - a client whose estimate is 0 tokens and whose settle charges what it used: a unit at or past its
 *     limit denies even an estimate of 0, so what it gets is the limit (plus one request's use), never a
 *     request a time for ever;
 *   - a sequential client estimating 1 token and using 5,000 against 1,000 per 2 s: its debt is paid off
 *     at the limit's rate however many windows that takes, so over a minute it gets the limit's 30,000 plus
 *     one request's use at most (a debt forgotten with its window gave it one request a window: 30);
 *   - a usage of 1e9 is owed for the 23 days it takes at that rate, in a state no larger than a small debt's.
 */
const redis = connect();
let store: Awaited<ReturnType<typeof storeClient>>;
beforeAll(async () => {
  store = await storeClient();
});
afterAll(closeClients);

const T0 = 1_700_000_040_000;
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];

describe.each(ALGORITHMS)('%s', (algorithm) => {
  describe.each(['redis', 'memory'])('on %s', (where) => {
    let now = T0;
    let limiter: Limiter;
    const make = (limit: number, window: string): Limiter => {
      const prefix = uniquePrefix('budget-debts');
      const common = { prefix, algorithm, limits: { limit, window, unit: 'tokens' }, refunds: true, clock: () => now };
      limiter =
        where === 'redis'
          ? createLimiter({ ...common, redis: store, failure: 'closed', timeoutMs: 10_000, blockCache: false })
          : createLimiter(common);
      return limiter;
    };
    beforeEach(() => {
      now = T0;
    });
    afterEach(async () => {
      await limiter.close();
    });

    /** A sequential client: reserve at `estimate`; when admitted, settle at `used`. True when admitted. */
    const request = async (estimate: number, used: number): Promise<boolean> => {
      const r = await limiter.reserve('key:attacker', { cost: estimate });
      if (!r.decision.allowed) return false;
      expect(await r.settle(used)).toBe(true);
      return true;
    };

    test('an estimate of 0, charged at settle: denied once what it used reaches the limit', async () => {
      make(1_000, '1m');
      let admitted = 0;
      for (let i = 0; i < 30; i++) if (await request(0, 200)) admitted++;
      // 200 a request against 1,000: five fill it (before: 30 of 30, 6,000 tokens, and settle() false).
      expect(admitted).toBe(5);
      expect((await limiter.peek('key:attacker', { cost: 0 })).remaining).toBe(0);
    });

    test("a debt of many windows is paid off at the limit's rate: estimate 1, use 5,000, against 1,000 per 2 s for a minute", async () => {
      make(1_000, '2s');
      let admitted = 0;
      for (let step = 0; step < 600; step++, now += 100) if (await request(1, 5_000)) admitted++;
      // The bound: the limit's 30,000 a minute, its burst of 1,000, and the use of the last one admitted.
      expect(admitted * 5_000).toBeLessThanOrEqual(30_000 + 1_000 + 5_000);
      expect(admitted).toBeGreaterThanOrEqual(5);
      if (process.env.FLOODGATE_BUDGET_FIGURES === '1') {
        process.stdout.write(`${algorithm} on ${where}: ${admitted} admitted in 60 s, ${admitted * 5_000} tokens against 30,000\n`);
      }
    }, 60_000);

    test('a use of 1e9 is owed for the 23 days it takes, in a state no larger than a small debt', async () => {
      make(1_000, '2s');
      expect(await request(1, 5_000)).toBe(true);
      const small = where === 'redis' ? await stateBytes(limiter.prefix) : 0;
      await limiter.reset('key:attacker');
      expect(await request(1, 1e9)).toBe(true);
      // 1e9 tokens at 1,000 per 2 s: 2e6 s, 23.1 days.
      now = T0 + 20 * 86_400_000;
      expect(await request(1, 1)).toBe(false);
      if (where === 'redis') expect(await stateBytes(limiter.prefix)).toBeLessThanOrEqual(small + 16);
      now = T0 + 24 * 86_400_000;
      expect(await request(1, 1)).toBe(true);
    });
  });
});

/** The serialized size of what a prefix holds in Redis (DUMP of each key). */
async function stateBytes(prefix: string): Promise<number> {
  let bytes = 0;
  for (const key of await keysUnder(redis, prefix)) bytes += (await redis.dumpBuffer(key))?.length ?? 0;
  return bytes;
}
