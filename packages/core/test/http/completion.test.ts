import { begin, end, pendingWork, settled, track } from '../../src/http/completion';
import { endOf, pause, whenResponseDone } from '../../src/http/node';
import { controlled } from '../fixtures/response-end';

/*
 * settled() (docs/testing.md): what a response sets off once it is over (a refund, a settle, a lease
 * release) is counted from the moment Floodgate watches the response until its store write has answered,
 * and settled() resolves once nothing is counted at the end of an event-loop turn. Whether it has resolved
 * is read after event-loop turns, never after real time: while anything is counted it cannot resolve.
 */

/** Resolves after `n` turns of the event loop (their check phases). */
async function turns(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

/** settled(), with whether it has resolved yet. */
function watch(): { readonly done: boolean; promise: Promise<void> } {
  const state = { done: false, promise: Promise.resolve() };
  state.promise = settled().then(() => void (state.done = true));
  return state;
}

/** A store write the test answers. */
function write(): { promise: Promise<boolean>; answer(): void } {
  let answer!: () => void;
  const promise = new Promise<boolean>((resolve) => (answer = () => resolve(true)));
  return { promise, answer };
}

afterEach(() => {
  // A test that left work counted would hold every later one: each ends what it began.
  expect(pendingWork()).toBe(0);
});

test('with nothing pending, settled() resolves at the end of the turn', async () => {
  const s = watch();
  expect(s.done).toBe(false);
  await turns(2);
  expect(s.done).toBe(true);
});

test('a watched response holds settled() until it is over and the store write its end started has answered', async () => {
  const res = controlled();
  const refund = write();
  whenResponseDone(res, (finished) => {
    if (finished) track(refund.promise);
  });
  const s = watch();
  await turns();
  expect(s.done).toBe(false); // the response is open
  res.end(true);
  await turns();
  expect(s.done).toBe(false); // its refund is in flight
  refund.answer();
  await s.promise;
  expect(s.done).toBe(true);
});

test('a response already over when it is watched holds settled() only for what its end started', async () => {
  const res = controlled();
  res.end(false);
  const release = write();
  whenResponseDone(res, () => track(release.promise));
  const s = watch();
  await turns();
  expect(s.done).toBe(false);
  release.answer();
  await s.promise;
});

test("endOf watches a response until it ends, the held release's store write included; a response already over is not watched", async () => {
  const res = controlled();
  const hold = endOf(res);
  const release = write();
  expect(hold(() => track(release.promise))).toBe(true);
  const s = watch();
  await turns();
  expect(s.done).toBe(false);
  res.end(false);
  await turns();
  expect(s.done).toBe(false);
  release.answer();
  await s.promise;

  // Nothing held (a denied request): watched until it ends all the same.
  const denied = controlled();
  endOf(denied);
  const t = watch();
  await turns();
  expect(t.done).toBe(false);
  denied.end(true);
  await t.promise;

  const gone = controlled();
  gone.end(false);
  expect(endOf(gone)(() => undefined)).toBe(false);
  expect(pendingWork()).toBe(0);
});

test('a slowDown delay holds settled() while it waits, and no longer once the client has gone', async () => {
  const res = controlled();
  const paused = pause(res, 60_000);
  const s = watch();
  await turns();
  expect(s.done).toBe(false);
  res.end(false);
  await expect(paused).resolves.toBe(false);
  await s.promise;
});

test('work handed on within a turn (a count ending as the next begins) never lets settled() through between them', async () => {
  begin();
  const s = watch();
  // The delay ends, and a promise callback later the adapter watches the response: one turn, no gap seen.
  end();
  await Promise.resolve();
  begin();
  await turns();
  expect(s.done).toBe(false);
  end();
  await s.promise;
});

test('settled() rejects after timeoutMs, saying what is still pending, and throws on a bad timeoutMs', async () => {
  const res = controlled();
  whenResponseDone(res, () => undefined);
  await expect(settled({ timeoutMs: 20 })).rejects.toThrow(/1 response is still open or finishing/);
  res.end(true);
  await settled({ timeoutMs: Infinity });
  for (const bad of [-1, Number.NaN, '1s']) expect(() => settled({ timeoutMs: bad as number })).toThrow(/timeoutMs/);
});
