import { StoreError } from '@floodgate/core';
import { scriptedLimiter, scriptedStore, uniquePrefix } from '@floodgate/testing';

/*
 * The scripted store (src/scripted-store.ts): its cues, its connection, and that its answers are the
 * in-memory twin's, through core's guard (deadline, first connection, breaker) on a virtual runtime.
 */
const quiet = { warn: () => undefined };

function setup(connection?: 'ready' | 'connecting' | 'down') {
  const store = scriptedStore({ connection });
  const limiter = scriptedLimiter(store, {
    prefix: uniquePrefix('scripted'),
    limits: { limit: 2, window: '1m' },
    failure: 'closed',
    timeoutMs: 100,
    logger: quiet,
  });
  return { store, rt: store.runtime, limiter };
}

test('answers at once by default: the twin decides, as Redis would', async () => {
  const { store, limiter } = setup();
  const decisions = [await limiter.check('ip:1'), await limiter.check('ip:1'), await limiter.check('ip:1')];
  expect(decisions.map((d) => [d.allowed, d.source])).toEqual([
    [true, 'redis'],
    [true, 'redis'],
    [false, 'redis'],
  ]);
  // The third is Redis's denial; a fourth is the block cache's, never sent.
  expect(await limiter.check('ip:1')).toMatchObject({ allowed: false, source: 'cache' });
  expect([store.received, store.ran, store.answered]).toEqual([3, 3, 3]);
});

test('an answer later than the deadline: the policy at the deadline, in virtual time; the late reply still counts', async () => {
  const { store, rt, limiter } = setup();
  store.next({ answer: 150 });
  const pending = limiter.check('ip:1');
  const decision = await rt.until(pending);
  expect(rt.now()).toBe(100);
  expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable', error: { kind: 'timeout' } });
  await rt.advance(50);
  expect([store.ran, store.answered]).toEqual([1, 1]);
  expect(await limiter.check('ip:1')).toMatchObject({ allowed: true, source: 'redis', remaining: 0 });
});

test("'hold' keeps commands unrun until release(); 'never' never runs them", async () => {
  const { store, rt, limiter } = setup();
  store.behave('hold');
  const held = [limiter.check('ip:1'), limiter.check('ip:2')];
  await rt.advance(100);
  expect((await Promise.all(held)).map((d) => d.error?.kind)).toEqual(['timeout', 'timeout']);
  expect([store.received, store.ran, store.holding]).toEqual([2, 0, 2]);
  store.release();
  await rt.settle();
  expect([store.ran, store.holding]).toEqual([2, 0]);
  store.behave('never');
  const lost = limiter.peek('ip:3');
  await rt.advance(100);
  expect((await lost).error?.kind).toBe('timeout');
  await rt.advance(60_000);
  expect(store.ran).toBe(2);
});

test('faults as a client reports them, mapped by core as a real client error is', async () => {
  const { store, limiter } = setup();
  const kinds = [];
  for (const fault of ['unavailable', 'reply', 'unsupported', 'timeout'] as const) {
    store.next({ error: fault });
    kinds.push((await limiter.peek('ip:1')).error?.kind);
  }
  expect(kinds).toEqual(['unavailable', 'reply', 'unsupported', 'timeout']);
  store.next({ error: new StoreError('overload', 'busy') });
  expect((await limiter.peek('ip:1')).error?.kind).toBe('overload');
  expect(store.failed).toBe(5);
});

test('a connection that is not ready: a first connect is waited for (within the deadline), a lost one is not', async () => {
  const { store, rt, limiter } = setup('connecting');
  const waiting = limiter.check('ip:1');
  await rt.advance(40);
  expect(store.received).toBe(0);
  store.connect();
  expect(await rt.until(waiting)).toMatchObject({ allowed: true, source: 'redis' });
  expect(rt.now()).toBe(40);
  store.drop();
  expect(await limiter.check('ip:1')).toMatchObject({ source: 'fallback', error: { kind: 'unavailable' } });
  expect(store.received).toBe(1);
  const cold = setup('connecting');
  const failing = cold.limiter.check('ip:1');
  cold.store.failConnect();
  expect(await failing).toMatchObject({ source: 'fallback', error: { kind: 'unavailable' } });
  expect(cold.store.received).toBe(0);
});
