import type { Decision } from '@floodgate/core';
import { scripted, uniquePrefix } from '@floodgate/testing';

/*
 * docs/security.md, "The deadline at first connect": a check never waits for its client's first connection
 * longer than `timeoutMs`, and a check that gave up while waiting is never sent later. On a scripted store
 * whose connection is not ready, in virtual time: each check settles at exactly its deadline, however many
 * wait. The same floods against real servers that accept TCP and do not answer (silent, paused, loading)
 * are test/resilience/first-connect.test.ts.
 */
const quiet = { warn: () => undefined };

/** Waiters for the first connection, and deadlines, still held by the store's guard. */
function held(store: object): { waiters: number; lanes: number } {
  const guard = store as unknown as { conn: { waiters: Set<unknown> }; runtime: { deadlines: { lanes: Map<number, unknown> } } };
  return { waiters: guard.conn.waiters.size, lanes: guard.runtime.deadlines.lanes.size };
}

test('a connection that never becomes ready: 20,000 checks settle at their deadline, by the policy, and nothing is left waiting', async () => {
  // `memory.maxKeys` caps what 'open' remembers of the identifiers it admitted (docs/security.md, "'open'
  // admits no flood").
  const { store, rt, limiter } = scripted(
    { prefix: uniquePrefix('silent'), limits: { limit: 5, window: '1m' }, timeoutMs: 100, memory: { maxKeys: 1_000 }, logger: quiet },
    'connecting',
  );
  let policy = 0;
  const settledAt = new Set<number>();
  const settled = Promise.all(
    Array.from({ length: 20_000 }, (_, i) =>
      limiter.check(`ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`).then((d) => {
        settledAt.add(rt.now());
        if (d.allowed && d.source === 'fallback' && d.error?.kind === 'timeout') policy++;
      }),
    ),
  );
  expect(held(store).waiters).toBe(20_000);
  await rt.advance(100);
  await settled;
  // Before: none of them settled (the wait for `ready` had no deadline); 200,000 such checks held 412 MB.
  expect(policy).toBe(20_000);
  expect([...settledAt]).toEqual([100]);
  // The checks that gave up are held nowhere: no waiter, no deadline, no timer.
  expect(held(store)).toEqual({ waiters: 0, lanes: 0 });
  expect(rt.pending).toBe(0);
  // Later ones get the same deadline, each from its own start.
  await rt.advance(30);
  const few = Array.from({ length: 200 }, (_, i) => limiter.check(`ip:10.9.0.${i}`).then(() => rt.now()));
  await rt.advance(100);
  expect(new Set(await Promise.all(few))).toEqual(new Set([230]));
  // Connected at last: none of the checks that gave up is sent.
  store.connect();
  await rt.settle();
  expect(store.received).toBe(0);
});

test("a paused server while its client connects ('closed'): 500 checks take the policy at the deadline, and none runs once it answers", async () => {
  const { store, rt, limiter } = scripted(
    { prefix: uniquePrefix('paused'), failure: 'closed', limits: { limit: 5, window: '1m' }, timeoutMs: 100, logger: quiet },
    'connecting',
  );
  const decisions = Promise.all(Array.from({ length: 500 }, (_, i) => limiter.check(`ip:10.1.${i >> 8}.${i & 255}`)));
  await rt.advance(100);
  expect((await decisions).every((d: Decision) => !d.allowed && d.reason === 'store-unavailable' && d.error?.kind === 'timeout')).toBe(
    true,
  );
  // The pause is over and the client ready: the 500 checks that gave up were never sent.
  await rt.advance(1_400);
  store.connect();
  expect((await limiter.check('ip:1.2.3.4')).source).toBe('redis');
  expect([store.received, store.ran]).toEqual([1, 1]);
});

test('a first connection in the middle of a burst: checks waiting for it are sent once it is ready, the rest decided as usual', async () => {
  const { store, rt, limiter } = scripted(
    { prefix: uniquePrefix('connects'), failure: 'closed', limits: { limit: 3, window: '1m' }, timeoutMs: 100, logger: quiet },
    'connecting',
  );
  const early = [limiter.check('ip:1'), limiter.check('ip:1')];
  await rt.advance(99);
  store.connect();
  const late = [limiter.check('ip:1'), limiter.check('ip:1')];
  const all = await rt.until(Promise.all([...early, ...late]));
  expect(all.map((d) => [d.allowed, d.source])).toEqual([
    [true, 'redis'],
    [true, 'redis'],
    [true, 'redis'],
    [false, 'redis'],
  ]);
  expect(rt.now()).toBe(99);
});
