import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createLimiter, type Decision, type Limiter } from '@floodgate/core';
import { closeClients, connect, testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { CircuitBreaker } from '../src/stores/circuit-breaker';
import { within } from './fixtures/fake-timers/common';

/*
 * An application's own test suite fakes the clock (Jest's default modern timers fake setImmediate,
 * setTimeout, performance, nextTick and queueMicrotask): a Redis-backed check must still settle, and the
 * socket Floodgate corked for the turn must be uncorked, or the application's own commands on that client
 * hang once the fake clock is gone. Floodgate's deadlines and write coalescing run on the event loop's real
 * timers whatever the test installs (docs/design.md, "Fake timers"). sinon and node:test mock timers: the
 * fixtures run in a child process (node:test needs its own runner; sinon patches node:timers too).
 */

afterEach(() => jest.useRealTimers());
afterAll(closeClients);

/** A ready client (connected under real timers) and a Redis-backed limiter on it. */
async function setup(limit: number, timeoutMs = 1000): Promise<{ redis: ReturnType<typeof connect>; prefix: string; limiter: Limiter }> {
  const redis = connect();
  await redis.ping();
  const prefix = uniquePrefix('fake');
  return { redis, prefix, limiter: createLimiter({ redis, prefix, failure: 'closed', timeoutMs, limits: { limit, window: '1m' } }) };
}

test("under jest.useFakeTimers() a Redis check settles, and the app's own commands on the client still work after useRealTimers", async () => {
  const { redis, prefix, limiter } = await setup(2);
  jest.useFakeTimers();
  const decisions: Decision[] = [];
  for (let i = 0; i < 3; i++) decisions.push(await within(limiter.check('user:1'), 2000, `check ${i}`));
  expect(decisions.map((d) => [d.allowed, d.source])).toEqual([
    [true, 'redis'],
    [true, 'redis'],
    [false, 'redis'],
  ]);
  // The application's own command sent in the same turn as a check, still under the fake clock.
  const [, own] = await within(Promise.all([limiter.check('user:2'), redis.set(`${prefix}:own`, 'a')]), 2000, 'check + own SET');
  expect(own).toBe('OK');
  jest.useRealTimers();
  expect(await within(redis.get(`${prefix}:own`), 2000, 'own GET after useRealTimers')).toBe('a');
  await within(limiter.close(), 2000, 'close');
});

test('under jest.useFakeTimers() the deadline runs in real time: a check to a Redis that never answers fails after timeoutMs', async () => {
  const { redis, prefix, limiter } = await setup(2, 300);
  await limiter.check('warm'); // scripts loaded, so the check below is one EVALSHA behind the pause
  // The client's connection is busy for 1.5 s (a blocking command on the same socket queues the check).
  const busy = redis.blpop(`${prefix}:never`, 1.5);
  jest.useFakeTimers();
  const t0 = process.uptime();
  const decision = await within(limiter.check('user:1'), 1200, 'check behind a busy connection');
  const tookMs = (process.uptime() - t0) * 1000;
  expect(decision).toMatchObject({ allowed: false, source: 'fallback' });
  expect(decision.error?.kind).toMatch(/^(timeout|overload)$/);
  expect(tookMs).toBeGreaterThanOrEqual(250);
  jest.useRealTimers();
  await busy;
  await limiter.close();
});

test("under Jest's legacy fake timers too: checks settle, and the deadline runs in real time", async () => {
  const { redis, prefix, limiter } = await setup(1, 300);
  await limiter.check('warm');
  jest.useFakeTimers({ legacyFakeTimers: true });
  const first = await within(limiter.check('user:1'), 2000, 'check');
  expect(first).toMatchObject({ allowed: true, source: 'redis' });
  const busy = redis.blpop(`${prefix}:never`, 1.5);
  const t0 = process.uptime();
  const timedOut = await within(limiter.check('user:2'), 1200, 'check behind a busy connection');
  expect(timedOut).toMatchObject({ allowed: false, source: 'fallback' });
  expect((process.uptime() - t0) * 1000).toBeGreaterThanOrEqual(250);
  jest.useRealTimers();
  await busy;
  await limiter.close();
});

test('under jest.useFakeTimers() an open circuit breaker probes again after its interval of real time', async () => {
  jest.useFakeTimers();
  const breaker = new CircuitBreaker(2, 100);
  for (let i = 0; i < 2; i++) breaker.failed(breaker.admit());
  expect(breaker.isOpen).toBe(true);
  expect(() => breaker.admit()).toThrow(/circuit/i);
  await within(new Promise((resolve) => void AbortSignal.timeout(150).addEventListener('abort', resolve)), 1000, 'real 150 ms');
  expect(breaker.admit()).toBe(true); // the next probe, after 100 ms of real time (the fake clock never moved)
});

/** Real time under any fake clock: AbortSignal.timeout runs on Node's internal timers. */
const realSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => void AbortSignal.timeout(ms).addEventListener('abort', () => resolve()));

test('under jest.useFakeTimers() overrides still refresh on real time: one set by another process applies within refreshMs', async () => {
  const prefix = uniquePrefix('fake-ovr');
  const make = async (): Promise<Limiter> => {
    const redis = connect();
    await redis.ping();
    return createLimiter({
      redis,
      prefix,
      name: 'api',
      failure: 'closed',
      timeoutMs: 2_000,
      limits: { free: { limit: 2, window: '1h' }, pro: { limit: 50, window: '1h' } },
      overrides: { refreshMs: 100 },
    });
  };
  const [a, b] = [await make(), await make()];
  // b reads its overrides (its first check) and starts refreshing, under real timers.
  expect((await b.peek('user:42')).limit).toBe(2);
  jest.useFakeTimers();
  // Two refresh periods of real time: every refresh from here is scheduled while the fakes are installed.
  await realSleep(250);
  await within(a.overrides.set('user:42', { plan: 'pro' }), 2000, 'set');
  let limit = 0;
  for (let i = 0; i < 40 && limit !== 50; i++) {
    await realSleep(50);
    limit = (await within(b.peek('user:42'), 2000, 'peek')).limit;
  }
  // Before: the refresh timer was the global setTimeout, which the fake clock froze: b never saw it.
  expect(limit).toBe(50);
  jest.useRealTimers();
  await Promise.all([a.close(), b.close()]);
});

test('under a fake setImmediate nobody marked (one that never fires), checks still settle: the backstop uncorks', async () => {
  const { redis, limiter } = await setup(1);
  const original = globalThis.setImmediate;
  globalThis.setImmediate = (() => ({})) as unknown as typeof setImmediate;
  try {
    const decisions = await within(Promise.all([limiter.check('a'), limiter.check('b'), limiter.check('a')]), 2000, 'checks');
    expect(decisions.map((d) => [d.allowed, d.source])).toEqual([
      [true, 'redis'],
      [true, 'redis'],
      [false, expect.stringMatching(/^(redis|cache)$/)],
    ]);
  } finally {
    globalThis.setImmediate = original;
  }
  expect(await within(redis.ping(), 2000, 'own PING')).toBe('PONG');
  await limiter.close();
});

const fixtures = join(__dirname, 'fixtures', 'fake-timers');
const TS = join(__dirname, '..', '..', '..', 'test', 'ts-register.cjs');

test.each([
  ['@sinonjs/fake-timers installed on globalThis (patches node:timers too)', 'sinon.ts'],
  ["node:test's mock.timers (setImmediate, setTimeout, setInterval, Date)", 'node-test.ts'],
])(
  '%s: checks settle and the client works after uninstall (child process)',
  (_, file) => {
    const run = spawnSync(process.execPath, ['--test-reporter=tap', '--require', TS, join(fixtures, file)], {
      env: { ...process.env, REDIS_URL: testRedisUrl() },
      encoding: 'utf8',
      // A hang guard, far from what a run takes (well under a second idle).
      timeout: 50_000,
    });
    expect({ status: run.status, out: run.stdout + run.stderr }).toMatchObject({ status: 0 });
    expect(run.stdout).toMatch(/^# pass 1$/m);
    expect(run.stdout).toMatch(/^# fail 0$/m);
  },
  60_000,
);
