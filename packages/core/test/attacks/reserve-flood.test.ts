import { createLimiter, type AlgorithmName, type Limiter, type Reservation } from '@floodgate/core';
import { closeClients, connect, keysUnder, uniquePrefix } from '@floodgate/testing';

/*
 * docs/budgets.md, "Checking first and charging after", mounted on a real redis-server: the failure of a
 * gateway that checks before the request and charges the tokens after it (hundreds of concurrent requests
 * all pass the check, then all charge). Here 300 concurrent reservations of 100 tokens against 1,000
 * tokens a minute (and 600 requests a minute), then their settles at actual costs both under and over the
 * estimate with 300 more reservations racing them:
 *   - admitted estimates never exceed the limit (each reservation is a check that counts at once);
 *   - what is counted in the end never exceeds the limit plus the excess the admitted requests settled
 *     past their estimates (the one overshoot a reservation allows, by design, and charged to the client);
 *   - each reservation is settled or cancelled once, however many calls race for it.
 * The limiter's clock is a test clock, held still, so the minute does not turn during the test.
 */
const redis = connect();
afterAll(closeClients);

const LIMIT = 1_000;
const ESTIMATE = 100;
const FLOOD = 300;
/** The actual tokens of the admitted requests, in turn: under and over the estimate of 100. */
const ACTUALS = [30, 250, 100, 0, 180, 95, 400, 60, 100, 10];

function tokens(algorithm: AlgorithmName): Limiter {
  const perMinute = { limit: LIMIT, window: '1m', unit: 'tokens' };
  return createLimiter({
    redis,
    prefix: uniquePrefix('reserve-flood'),
    algorithm,
    // Sliding log counts one unit: tokens alone; the others count requests beside.
    limits: algorithm === 'sliding-log' ? perMinute : [perMinute, { limit: 600, window: '1m' }],
    refunds: true,
    clock: () => 1_700_000_040_000,
    timeoutMs: 10_000,
  });
}

const cost = (algorithm: AlgorithmName, n: number) => (algorithm === 'sliding-log' ? n : { requests: 1, tokens: n });

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('%s', (algorithm) => {
  test(`${FLOOD} concurrent reservations of ${ESTIMATE} tokens against ${LIMIT} a minute hold the bound`, async () => {
    const limiter = tokens(algorithm);
    try {
      const reserve = (): Promise<Reservation> => limiter.reserve('key:client', { cost: cost(algorithm, ESTIMATE) });
      const first = await Promise.all(Array.from({ length: FLOOD }, reserve));
      const admitted = first.filter((r) => r.decision.allowed);
      // Admitted estimates never above the limit: exactly as many as fit.
      expect(admitted.length * ESTIMATE).toBeLessThanOrEqual(LIMIT);
      expect(admitted).toHaveLength(LIMIT / ESTIMATE);

      // The settles, with a second flood racing them.
      const actuals = admitted.map((_, i) => ACTUALS[i % ACTUALS.length]!);
      const excess = actuals.reduce((sum, a) => sum + Math.max(a - ESTIMATE, 0), 0);
      const [settled, second] = await Promise.all([
        Promise.all(admitted.map((r, i) => r.settle(cost(algorithm, actuals[i]!)))),
        Promise.all(Array.from({ length: FLOOD }, reserve)),
      ]);
      expect(settled.every(Boolean)).toBe(true);
      const again = second.filter((r) => r.decision.allowed);
      // What stays counted: the first flood at its actual costs, the second at its estimates (unsettled).
      const charged = actuals.reduce((a, b) => a + b, 0) + again.length * ESTIMATE;
      expect(charged).toBeLessThanOrEqual(LIMIT + excess);
      // Nothing fits now that would take it past the limit: a last estimate is admitted only with room.
      const last = await limiter.reserve('key:client', { cost: cost(algorithm, ESTIMATE) });
      if (last.decision.allowed) expect(charged + ESTIMATE).toBeLessThanOrEqual(LIMIT);

      // At most once, however many settles and cancels race for one reservation.
      for (const r of again) {
        const answers = await Promise.all([r.settle(cost(algorithm, 1)), r.cancel(), r.settle(cost(algorithm, 500)), r.cancel()]);
        expect(answers.filter(Boolean)).toHaveLength(1);
      }
    } finally {
      await limiter.close();
    }
  }, 60_000);
});

test('fixed window: the tokens counted are exactly the actual costs settled, past the limit by their excess alone', async () => {
  const limiter = tokens('fixed-window');
  try {
    const flood = await Promise.all(
      Array.from({ length: FLOOD }, () => limiter.reserve('key:client', { cost: cost('fixed-window', ESTIMATE) })),
    );
    const admitted = flood.filter((r) => r.decision.allowed);
    await Promise.all(admitted.map((r, i) => r.settle(cost('fixed-window', ACTUALS[i]!))));
    const key = (await keysUnder(redis, limiter.prefix)).find((k) => k.endsWith('{key:client}'))!;
    const counted = Number(await redis.hget(key, '60000@tokens'));
    const sum = ACTUALS.reduce((a, b) => a + b, 0);
    expect(counted).toBe(sum);
    expect(counted).toBeGreaterThan(LIMIT);
    expect(counted - LIMIT).toBeLessThanOrEqual(ACTUALS.reduce((s, a) => s + Math.max(a - ESTIMATE, 0), 0));
    expect((await limiter.check('key:client', { cost: cost('fixed-window', 1) })).allowed).toBe(false);
  } finally {
    await limiter.close();
  }
});
