import { CircuitBreaker } from './circuit-breaker';
import { StoreError } from './errors';

/** A breaker on a hand-driven clock: 3 failures open it, probes at most every 250 ms. */
function rig() {
  let now = 0;
  const breaker = new CircuitBreaker(3, 250, () => now);
  let sent = 0;
  const ok = () => breaker.call(async () => ++sent);
  const fail = () => breaker.call(async () => {
    sent++;
    throw new Error('boom');
  });
  return { breaker, ok, fail, advance: (ms: number) => (now += ms), sent: () => sent };
}

test('opens after N consecutive failures and then refuses without sending', async () => {
  const r = rig();
  await expect(r.fail()).rejects.toThrow('boom');
  await r.ok();
  for (let i = 0; i < 3; i++) await expect(r.fail()).rejects.toThrow('boom');
  expect(r.breaker.isOpen).toBe(true);
  const before = r.sent();
  const refused = await r.ok().catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(StoreError);
  expect((refused as StoreError).kind).toBe('circuit-open');
  expect(r.sent()).toBe(before);
});

test('probes at most every 250 ms, one at a time, and closes on success', async () => {
  const r = rig();
  for (let i = 0; i < 3; i++) await expect(r.fail()).rejects.toThrow();
  r.advance(249);
  await expect(r.ok()).rejects.toBeInstanceOf(StoreError);
  r.advance(1);
  let release!: () => void;
  const probe = r.breaker.call(() => new Promise<string>((res) => (release = () => res('up'))));
  // While the probe is in flight, nothing else is sent, however much time passes.
  r.advance(1_000);
  await expect(r.ok()).rejects.toBeInstanceOf(StoreError);
  release();
  await expect(probe).resolves.toBe('up');
  expect(r.breaker.isOpen).toBe(false);
  await expect(r.ok()).resolves.toBeGreaterThan(0);
});

test('a failed probe keeps it open and restarts the interval', async () => {
  const r = rig();
  for (let i = 0; i < 3; i++) await expect(r.fail()).rejects.toThrow();
  r.advance(250);
  await expect(r.fail()).rejects.toThrow('boom');
  expect(r.breaker.isOpen).toBe(true);
  r.advance(200);
  await expect(r.ok()).rejects.toBeInstanceOf(StoreError);
  r.advance(50);
  await r.ok();
  expect(r.breaker.isOpen).toBe(false);
});
