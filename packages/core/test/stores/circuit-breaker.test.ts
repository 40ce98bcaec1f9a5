import { scripted, uniquePrefix } from '@floodgate/testing';
import { BREAKER_THRESHOLD, CircuitBreaker, PROBE_INTERVAL_MS } from '../../src/stores/circuit-breaker';
import { StoreError } from '../../src/kernel/errors';

/** A breaker on a hand-driven clock: 3 faults open it, probes at most every 250 ms. */
function rig() {
  let now = 0;
  const breaker = new CircuitBreaker(3, 250, () => now);
  /** Tries to send: 'refused', or the outcome applied ('ok' | 'fault' | 'neither'). */
  const attempt = (outcome: 'ok' | 'fault' | 'neither'): 'refused' | 'sent' => {
    let probe: boolean;
    try {
      probe = breaker.admit();
    } catch (err) {
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).kind).toBe('circuit-open');
      return 'refused';
    }
    if (outcome === 'ok') breaker.succeeded(probe);
    else if (outcome === 'fault') breaker.failed(probe);
    else breaker.released(probe);
    return 'sent';
  };
  return { breaker, attempt, advance: (ms: number) => (now += ms) };
}

test('opens after N consecutive faults and then refuses without sending', () => {
  const r = rig();
  r.attempt('fault');
  r.attempt('ok');
  for (let i = 0; i < 3; i++) expect(r.attempt('fault')).toBe('sent');
  expect(r.breaker.isOpen).toBe(true);
  expect(r.attempt('ok')).toBe('refused');
});

test('outcomes that say nothing about the connection (own backlog) never open it', () => {
  const r = rig();
  for (let i = 0; i < 100; i++) r.attempt('neither');
  expect(r.breaker.isOpen).toBe(false);
  // ...and do not reset the count of real faults either.
  r.attempt('fault');
  r.attempt('fault');
  r.attempt('neither');
  r.attempt('fault');
  expect(r.breaker.isOpen).toBe(true);
});

test('probes at most every 250 ms, one at a time, and closes on success', () => {
  const r = rig();
  for (let i = 0; i < 3; i++) r.attempt('fault');
  r.advance(249);
  expect(r.attempt('ok')).toBe('refused');
  r.advance(1);
  const probe = r.breaker.admit();
  expect(probe).toBe(true);
  // While the probe is in flight, nothing else is sent, however much time passes.
  r.advance(1_000);
  expect(r.attempt('ok')).toBe('refused');
  r.breaker.succeeded(probe);
  expect(r.breaker.isOpen).toBe(false);
  expect(r.attempt('ok')).toBe('sent');
});

test('a failed probe keeps it open and restarts the interval; a released probe frees the slot', () => {
  const r = rig();
  for (let i = 0; i < 3; i++) r.attempt('fault');
  r.advance(250);
  expect(r.attempt('fault')).toBe('sent');
  expect(r.breaker.isOpen).toBe(true);
  r.advance(200);
  expect(r.attempt('ok')).toBe('refused');
  r.advance(50);
  expect(r.attempt('neither')).toBe('sent');
  expect(r.breaker.isOpen).toBe(true);
  r.advance(250);
  expect(r.attempt('ok')).toBe('sent');
  expect(r.breaker.isOpen).toBe(false);
});

test("through a store's guard, in virtual time: silent deadlines open it, one probe at a time, probes every 250 ms until one is answered", async () => {
  const { store, rt, limiter } = scripted({
    prefix: uniquePrefix('breaker'),
    limits: { limit: 100, window: '1m' },
    failure: 'closed',
    timeoutMs: 100,
    logger: { warn: () => undefined },
  });
  store.behave('never');
  const silent = Promise.all(Array.from({ length: BREAKER_THRESHOLD }, (_, i) => limiter.check(`ip:10.0.0.${i}`)));
  await rt.advance(100);
  expect((await silent).every((d) => d.error?.kind === 'timeout')).toBe(true);
  expect(store.breakerOpen).toBe(true);
  // Open: refused without sending until the probe interval has passed.
  await rt.advance(PROBE_INTERVAL_MS - 1);
  expect((await limiter.check('ip:1')).error?.kind).toBe('circuit-open');
  expect(store.received).toBe(BREAKER_THRESHOLD);
  await rt.advance(1);
  // The probe goes (silent too); while it is in flight, nothing else is sent.
  const probe = limiter.check('ip:2');
  expect((await limiter.check('ip:3')).error?.kind).toBe('circuit-open');
  expect(store.received).toBe(BREAKER_THRESHOLD + 1);
  await rt.advance(100);
  expect((await probe).error?.kind).toBe('timeout');
  // The failed probe kept it open: the next one 250 ms after it was sent (100 ms of it spent waiting for it),
  // and its answer closes it.
  store.behave({ answer: 1 });
  await rt.advance(PROBE_INTERVAL_MS - 100 - 1);
  expect((await limiter.check('ip:4')).error?.kind).toBe('circuit-open');
  await rt.advance(1);
  const closing = limiter.check('ip:5');
  await rt.advance(1);
  expect((await closing).source).toBe('redis');
  expect(store.breakerOpen).toBe(false);
});
