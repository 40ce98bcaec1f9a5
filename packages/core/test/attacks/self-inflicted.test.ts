import type { Decision, LimiterEvent, LimiterOptions } from '@floodgate/core';
import { scripted, scriptedLimiter, uniquePrefix, type ConnectionState } from '@floodgate/testing';

/*
 * docs/security.md, "Self-inflicted fail-open": a client's own traffic never buys it admissions. On a scripted
 * store in virtual time: the units in flight, overload (a deadline run out while the server kept answering, or
 * by this process's own delay), the breaker's faults and known denials, each asserted exactly. The same
 * floods against a real redis-server are test/resilience/self-inflicted.test.ts.
 */
const ID = 'ip:203.0.113.7';
const quiet = { warn: () => undefined };

function setup(options: Partial<LimiterOptions>, connection?: ConnectionState) {
  const events: LimiterEvent[] = [];
  const made = scripted(
    { prefix: uniquePrefix('self'), limits: { limit: 100, window: '1m' }, logger: quiet, onEvent: (e) => events.push(e), ...options },
    connection,
  );
  return { ...made, events };
}

test.each([
  [250, 1],
  [50, 1],
  [50, 40],
])(
  '6,000 concurrent checks of one identifier, timeoutMs %i, the store answering in %i ms: exactly the limit, by the store',
  async (timeoutMs, latency) => {
    const { store, rt, limiter } = setup({ timeoutMs });
    store.behave({ answer: latency });
    const decisions = await rt.until(Promise.all(Array.from({ length: 6_000 }, () => limiter.check(ID))));
    // Before: the back of 6,000 scripts in flight ran out the deadline and took the policy ('open'): 939
    // admitted in one run of the review; 5,712 with timeoutMs 50.
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(decisions.filter((d) => d.allowed && d.source !== 'redis')).toHaveLength(0);
    // No more than the limit's worth in flight at once: the limit's checks, then as many more (their
    // replies were not denials yet); the rest answered here.
    expect(store.received).toBe(200);
  },
);

test('a deadline run out while the store kept answering earlier commands is overload, never an admission by the policy', async () => {
  const { store, rt, limiter, events } = setup({
    algorithm: 'fixed-window',
    limits: [
      { limit: 5, window: '1s' },
      { limit: 50, window: '1m' },
    ],
    timeoutMs: 20,
  });
  // The first reply comes quickly, the others after the deadline: replies kept arriving, the backlog is ours.
  store.next({ answer: 5 });
  store.behave({ answer: 30 });
  const decisions = await rt.until(
    Promise.all(Array.from({ length: 40 }, (_, i) => limiter.check(Array.from({ length: 16 }, (_, j) => `user:${i}-${j}`)))),
  );
  expect(decisions[0]).toMatchObject({ allowed: true, source: 'redis' });
  const late = decisions.slice(1);
  expect(late.every((d) => !d.allowed && d.reason === 'store-unavailable' && d.error?.kind === 'overload')).toBe(true);
  expect(rt.now()).toBe(20);
  // Overload is not a connection fault: the breaker stays closed, and another limiter on the same store (whose
  // breaker is shared) is answered by it.
  expect(store.breakerOpen).toBe(false);
  expect(events.some((e) => e.type === 'store-error' && e.error.kind === 'circuit-open')).toBe(false);
  await rt.advance(10);
  store.behave({ answer: 0 });
  const other = scriptedLimiter(store, { prefix: uniquePrefix('other'), limits: { limit: 5, window: '1m' }, logger: quiet });
  expect((await other.check('ip:192.0.2.1')).source).toBe('redis');
});

test('a deadline run out in this process before the command left (half the budget gone waiting) is overload too', async () => {
  // The checks wait for a first connection that comes 15 ms into their 20 ms: the server had 5 ms, under half.
  const { store, rt, limiter } = setup({ timeoutMs: 20 }, 'connecting');
  store.behave('never');
  const checks = Promise.all(Array.from({ length: 10 }, (_, i) => limiter.check(`ip:10.0.0.${i}`)));
  await rt.advance(15);
  store.connect();
  const decisions: Decision[] = await rt.until(checks);
  expect(decisions.every((d) => !d.allowed && d.error?.kind === 'overload')).toBe(true);
  // Ten deadlines, none of them the server's silence: the breaker (5 faults) stays closed.
  expect(store.breakerOpen).toBe(false);
});

test("one limiter's error replies do not open the breaker that every limiter on the store shares", async () => {
  const { store, limiter: broken } = setup({ name: 'broken', limits: { limit: 5, window: '1m' } });
  const healthy = scriptedLimiter(store, { prefix: uniquePrefix('healthy'), limits: { limit: 5, window: '1m' }, logger: quiet });
  store.behave({ error: 'reply' });
  const errors: Decision[] = [];
  for (let i = 0; i < 20; i++) errors.push(await broken.check('ip:1.1.1.1'));
  // 'open' admits the identifier's limit (5) from this process, five error replies, then denies it here
  // without sending anything (docs/security.md, "'open' admits no flood").
  expect(errors.slice(0, 5).every((d) => d.allowed && d.source === 'fallback' && d.error?.kind === 'reply')).toBe(true);
  expect(errors.slice(5).every((d) => !d.allowed && d.source === 'local' && d.reason === 'limit')).toBe(true);
  expect(store.received).toBe(5);
  // Before: 5 error replies opened the breaker and every limiter on this client failed open.
  expect(store.breakerOpen).toBe(false);
  store.behave({ answer: 0 });
  expect((await healthy.check('ip:2.2.2.2')).source).toBe('redis');
});

test('penalty: an identifier the cache knows is over its limit stays denied while the store is paused', async () => {
  const { store, rt, limiter } = setup({ penalty: true, limits: { limit: 3, window: '1m' }, timeoutMs: 50 });
  for (let i = 0; i < 4; i++) await limiter.check('ip:203.0.113.50');
  expect(await limiter.check('ip:203.0.113.50')).toMatchObject({ allowed: false, source: 'redis' });
  store.behave('hold');
  const during = await rt.until(Promise.all(Array.from({ length: 20 }, () => limiter.check('ip:203.0.113.50'))));
  // Before: penalty turned the cache off, so these took the policy ('open': admitted).
  expect(during.every((d) => !d.allowed && d.reason === 'limit')).toBe(true);
  // An identifier nobody knows about takes the policy as documented ('open').
  const other = limiter.check('ip:192.0.2.9');
  await rt.advance(50);
  expect(await other).toMatchObject({ allowed: true, source: 'fallback', error: { kind: 'timeout' } });
});
