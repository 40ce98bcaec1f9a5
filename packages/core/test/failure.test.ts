import type { Decision, LimiterEvent, LimiterOptions } from '@floodgate/core';
import { scripted, uniquePrefix, type ConnectionState } from '@floodgate/testing';

/*
 * The failure policies (docs/security.md, docs/design.md invariant 6): how a limiter answers when its store
 * does not, on a scripted store (@floodgate/testing) and a virtual clock: every check settles by its
 * deadline, follows the policy, reaches onEvent and never rejects. The same faults on a real redis-server
 * (paused, stopped, never connecting, out of memory) are test/resilience/failure.test.ts.
 */
const ID = 'ip:1.1.1.1';

function setup(options: Partial<LimiterOptions> = {}, connection?: ConnectionState) {
  const events: LimiterEvent[] = [];
  const warnings: string[] = [];
  const made = scripted(
    {
      prefix: uniquePrefix('fail'),
      algorithm: 'fixed-window',
      limits: { limit: 2, window: '1h' },
      timeoutMs: 200,
      logger: { warn: (m) => void warnings.push(m) },
      onEvent: (e) => events.push(e),
      ...options,
    },
    connection,
  );
  return { ...made, events, warnings };
}

/** Resolves each check with the virtual time it settled at. */
function timed(rt: { now: () => number }, checks: Promise<Decision>[]): Promise<[Decision, number][]> {
  return Promise.all(checks.map((p) => p.then((d): [Decision, number] => [d, rt.now()])));
}

describe('a paused store (commands held, unanswered): every check settles at its deadline and follows the policy', () => {
  test.each(['open', 'closed', 'local'] as const)('failure: %s', async (failure) => {
    const { store, rt, limiter, events } = setup({ failure });
    expect((await limiter.check(ID)).source).toBe('redis');
    store.behave('hold');
    // Limit 2 (1 used): two checks in flight at once (engine/inflight.ts), the third waits behind them.
    const settling = timed(rt, [limiter.check(ID), limiter.check(ID), limiter.check(ID)]);
    await rt.advance(200);
    const results = await settling;
    // All at the deadline (200 ms of virtual time), none at the pause's end.
    expect(results.map(([, at]) => at)).toEqual([200, 200, 200]);
    expect(store.received).toBe(3);
    const [first, second, third] = results.map(([d]) => d);
    if (failure === 'open') {
      // Admitted by the policy, up to the rule's capacity from this process...
      for (const d of [first!, second!])
        expect(d).toMatchObject({ allowed: true, source: 'fallback', states: [], error: { kind: 'timeout' } });
      // ...and the third, which waited for room until the two ahead had taken it, denied here: they took the
      // identifier's capacity in admissions already (an outage is no reason to admit more than the limit at once).
      expect(third).toMatchObject({ allowed: false, source: 'local', reason: 'limit', identifier: ID });
    }
    if (failure === 'closed') {
      for (const d of [first!, second!, third!]) {
        expect(d).toMatchObject({ allowed: false, reason: 'store-unavailable', source: 'fallback' });
        expect(d.retryAfterMs).toBeGreaterThan(0);
      }
      expect(third!.error?.message).toMatch(/not sent/);
    }
    if (failure === 'local') {
      // The in-memory limiter with the same rules: limit 2, so the third local check is denied.
      expect([first, second, third].map((d) => [d!.allowed, d!.source])).toEqual([
        [true, 'fallback'],
        [true, 'fallback'],
        [false, 'fallback'],
      ]);
      expect(third!.reason).toBe('limit');
    }
    expect(events.filter((e) => e.type === 'store-error')).toHaveLength(failure === 'open' ? 2 : 3);
    // The pause ends: the store runs what it held, and decides again; the late replies reach no caller.
    store.behave({ answer: 1 });
    store.release();
    await rt.settle();
    const after = limiter.check('ip:9.9.9.9');
    await rt.advance(1);
    expect((await after).source).toBe('redis');
  });
});

describe('a connection that is not ready', () => {
  test('lost after it was ready: refused at once, without sending (nothing runs, counted, after a reconnect)', async () => {
    const { store, rt, limiter } = setup({ failure: 'closed' });
    expect((await limiter.check(ID)).source).toBe('redis');
    store.drop();
    const decision = await limiter.check(ID);
    expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable', error: { kind: 'unavailable' } });
    expect(rt.now()).toBe(0);
    expect(store.received).toBe(1);
  });

  test("lost, with 'open': the policy admits the identifier's limit from this process and denies the rest here", async () => {
    const { store, limiter } = setup({ failure: 'open' });
    expect((await limiter.check(ID)).source).toBe('redis');
    store.drop();
    const results = await Promise.all([1, 2, 3, 4].map(() => limiter.check(ID)));
    expect(results.every((d) => d.error === undefined || d.error.kind === 'unavailable')).toBe(true);
    expect(results.filter((d) => d.allowed && d.source === 'fallback')).toHaveLength(2);
    expect(results.filter((d) => !d.allowed).every((d) => d.source === 'local' && d.reason === 'limit')).toBe(true);
  });

  test('connecting for the first time: waited for within the deadline, not failed open; Redis decides once it connects', async () => {
    const { store, rt, limiter } = setup({ failure: 'closed' }, 'connecting');
    const decisions = timed(rt, [limiter.check(ID), limiter.check(ID), limiter.check(ID)]);
    await rt.advance(150);
    expect(store.received).toBe(0);
    store.connect();
    const results = await decisions;
    expect(results.map(([d]) => [d.allowed, d.source])).toEqual([
      [true, 'redis'],
      [true, 'redis'],
      [false, 'redis'],
    ]);
    expect(results.map(([, at]) => at)).toEqual([150, 150, 150]);
  });

  test('connecting past the deadline: the checks take the policy at the deadline and are never sent', async () => {
    const { store, rt, limiter } = setup({ failure: 'closed' }, 'connecting');
    const decisions = timed(
      rt,
      Array.from({ length: 5 }, (_, i) => limiter.check(`ip:10.0.0.${i}`)),
    );
    await rt.advance(200);
    const results = await decisions;
    expect(results.every(([d, at]) => at === 200 && !d.allowed && d.error?.kind === 'timeout')).toBe(true);
    expect(results[0]![0].error?.message).toMatch(/did not become ready within 200 ms/);
    store.connect();
    await rt.settle();
    expect(store.received).toBe(0);
    expect(store.runtime.pending).toBe(0);
  });

  test('a first connection that fails for good: the policy at once', async () => {
    const { store, rt, limiter } = setup({ failure: 'closed' }, 'connecting');
    const pending = limiter.check(ID);
    await rt.advance(20);
    store.failConnect();
    expect(await pending).toMatchObject({
      allowed: false,
      source: 'fallback',
      reason: 'store-unavailable',
      error: { kind: 'unavailable' },
    });
    expect(rt.now()).toBe(20);
  });
});

test('an error reply maps to the policy and reaches onEvent, never a rejection; one warning per outage', async () => {
  const { store, limiter, events, warnings } = setup({ failure: 'closed' });
  store.next({ error: 'reply' }, 2);
  const decision = await limiter.check(ID);
  await limiter.check(ID);
  expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable', error: { kind: 'reply' } });
  expect(String((decision.error?.cause as Error).message)).toMatch(/OOM/);
  // Each check: its store-error, then its decision event (source 'fallback').
  expect(events.map((e) => e.type)).toEqual(['store-error', 'decision', 'store-error', 'decision']);
  // One warning per outage, not one per check; the driver's text stays in `cause`.
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(/failure policy 'closed'/);
  // The store answers again: the outage is over, and the next one warns again.
  expect((await limiter.check(ID)).source).toBe('redis');
  store.next({ error: 'unavailable' });
  await limiter.check(ID);
  expect(warnings).toHaveLength(2);
});

test('a silent server trips the breaker: checks are refused without sending, and one probe at a time goes through', async () => {
  const { store, rt, limiter, events } = setup({ failure: 'closed', timeoutMs: 100 });
  store.behave('never');
  // Five silent deadlines (the breaker's threshold) open it.
  for (let i = 0; i < 5; i++) {
    const check = limiter.check(`ip:10.1.0.${i}`);
    await rt.advance(100);
    expect((await check).error?.kind).toBe('timeout');
  }
  expect(store.received).toBe(5);
  const refused = await limiter.check('ip:10.1.1.1');
  expect(refused.error?.kind).toBe('circuit-open');
  expect(store.received).toBe(5);
  expect(events.filter((e) => e.type === 'store-error' && e.error.kind === 'circuit-open')).toHaveLength(1);
  // 250 ms after it opened, one probe; it answers, and the breaker closes.
  store.behave({ answer: 0 });
  await rt.advance(250);
  expect((await limiter.check('ip:10.1.1.2')).source).toBe('redis');
  expect((await limiter.check('ip:10.1.1.3')).source).toBe('redis');
  expect(store.received).toBe(7);
});
