import { createHttpLimiter } from '@floodgate/core/adapter';
import { TEST_DEADLINE, closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * headers: 'legacy' sends X-RateLimit-Reset as epoch seconds. It is computed from the decision's own instant
 * (the store's clock), so every response of one fixed window carries the same value: reading Date.now()
 * after the reply added the round trip to the window's end, and a window that ends on a whole second then
 * came out one second late on some requests and not on others.
 */
const redis = connect();
afterAll(closeClients);

const resetOf = (outcome: { set: [string, string][] }): number => Number(outcome.set.find(([h]) => h === 'X-RateLimit-Reset')?.[1]);

test('a fixed window gives one X-RateLimit-Reset, its end in epoch seconds, on every request (store clock)', async () => {
  const windowStart = Date.UTC(2024, 0, 1, 12, 0, 0);
  let now = windowStart + 100;
  const http = createHttpLimiter<object>({
    redis,
    prefix: uniquePrefix('legacy'),
    algorithm: 'fixed-window',
    clock: () => now,
    headers: 'legacy',
    limits: { limit: 10, window: '1m' },
    // A first connection on a busy machine can outlast the default 250 ms: then the policy answers, with no reset.
    ...TEST_DEADLINE,
  });
  const resets: number[] = [];
  for (const at of [100, 20_000, 59_999]) {
    now = windowStart + at;
    resets.push(resetOf(await http.run({}, '10.0.0.1')));
  }
  // Denied requests (answered by Redis, then by the block cache) report the same window end.
  for (let i = 0; i < 9; i++) await http.run({}, '10.0.0.1');
  const denied = await http.run({}, '10.0.0.1');
  expect(denied.action).toBe('deny');
  expect(denied.decision?.source).toBe('cache');
  resets.push(resetOf(denied));
  expect(resets).toEqual([0, 1, 2, 3].map(() => (windowStart + 60_000) / 1000));
  await http.limiter.close();
});

test('with Redis TIME, 20 requests of one minute window all report the window end (a whole minute)', async () => {
  const http = createHttpLimiter<object>({
    redis,
    prefix: uniquePrefix('legacy'),
    algorithm: 'fixed-window',
    headers: 'legacy',
    limits: { limit: 100, window: '1m' },
  });
  const resets: number[] = [];
  for (let i = 0; i < 20; i++) resets.push(resetOf(await http.run({}, '10.0.0.2')));
  // The run may straddle a minute boundary: then two windows, each reported by its own end.
  const distinct = [...new Set(resets)];
  expect(distinct.length).toBeLessThanOrEqual(2);
  for (const r of distinct) expect(r % 60).toBe(0);
  await http.limiter.close();
});
