import { ArgumentError, createLimiter, type Decision, type Limiter } from '@floodgate/core';
import { uniquePrefix } from '@floodgate/testing';

/* acquire(): sleeps for the retry time, first come first served, gives up early, never rejects a denial. */
function make(limit: number, window: number | string): Limiter {
  return createLimiter({ prefix: uniquePrefix('acq'), algorithm: 'sliding-log', limits: { limit, window } });
}

test('waits for the retry time and then admits, without polling the store', async () => {
  const lim = make(2, 150);
  await lim.check('api:geo');
  await lim.check('api:geo');
  const check = jest.spyOn(lim, 'check');
  const d = await lim.acquire('api:geo', { maxWaitMs: 5_000 });
  expect(d.allowed).toBe(true);
  // one denied check, one sleep, one admitted check (a timer may wake a hair early: allow one more)
  expect(check.mock.calls.length).toBeGreaterThanOrEqual(2);
  expect(check.mock.calls.length).toBeLessThanOrEqual(3);
});

test('waiters on the same identifiers are served in order', async () => {
  const lim = make(1, 60);
  await lim.check(['api:maps', 'user:erin']);
  const order: number[] = [];
  const waiters = [0, 1, 2].map((i) =>
    lim.acquire(['user:erin', 'api:maps'], { maxWaitMs: 10_000 }).then((d) => {
      order.push(i);
      return d;
    }),
  );
  const decisions = await Promise.all(waiters);
  expect(decisions.map((d) => d.allowed)).toEqual([true, true, true]);
  expect(order).toEqual([0, 1, 2]);
});

test('gives up at once when the retry time exceeds the wait left, with the denied decision', async () => {
  const lim = make(1, '1h');
  await lim.check('api:mail');
  const check = jest.spyOn(lim, 'check');
  const d = await lim.acquire('api:mail', { maxWaitMs: 1_000 });
  expect(d).toMatchObject({ allowed: false, reason: 'limit' });
  expect(d.retryAfterMs).toBeGreaterThan(1_000);
  expect(check).toHaveBeenCalledTimes(1);
});

test('abort stops the wait and resolves with the last denied decision; a queued waiter gets a denial too', async () => {
  const lim = make(1, '10s');
  await lim.check('api:sms');
  const controller = new AbortController();
  const first = lim.acquire('api:sms', { maxWaitMs: Infinity, signal: controller.signal });
  const second = lim.acquire('api:sms', { maxWaitMs: Infinity, signal: controller.signal });
  await new Promise((r) => setImmediate(r));
  controller.abort();
  const [a, b]: Decision[] = await Promise.all([first, second]);
  expect(a).toMatchObject({ allowed: false, reason: 'limit' });
  expect(b).toMatchObject({ allowed: false, reason: 'limit' });
  expect(b?.retryAfterMs).toBeGreaterThan(0);
});

test('bad options are argument errors', async () => {
  const lim = make(1, '1s');
  await expect(lim.acquire('api:x', { maxWaitMs: -1 })).rejects.toThrow(ArgumentError);
  await expect(lim.acquire('api:x', { cost: 1.5 })).rejects.toThrow(ArgumentError);
});
