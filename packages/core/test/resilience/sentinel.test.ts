import Redis from 'ioredis';
import { createLimiter, type Decision } from '@floodgate/core';
import { forceFailover, runLoad, SENTINEL_MASTER, startSentinels, uniquePrefix, type SentinelSetup } from '@floodgate/testing';

let setup: SentinelSetup;
let client: Redis;
beforeAll(async () => {
  setup = await startSentinels();
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await setup?.stop();
});

test('an ioredis client with sentinels works unchanged through a forced failover', async () => {
  // The options docs/production.md recommends: fast reconnects, no re-sent scripts, a reconnect when a
  // demoted master answers READONLY, and failoverDetector: without it the client stays on the old master
  // (still a writable master until the sentinels reconfigure it, up to ~10 s later) after a failover.
  client = new Redis({
    sentinels: setup.sentinelAddresses,
    name: SENTINEL_MASTER,
    retryStrategy: () => 50,
    failoverDetector: true,
    autoResendUnfulfilledCommands: false,
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  });
  client.on('error', () => undefined);
  const limiter = createLimiter({
    algorithm: 'fixed-window',
    redis: client,
    prefix: uniquePrefix('sentinel'),
    limits: { limit: 1_000_000, window: '1h' },
    timeoutMs: 200,
    failure: 'closed',
    blockCache: false,
    logger: { warn: () => undefined },
  });
  expect((await limiter.check('warm')).source).toBe('redis');
  let failedOverAt = Infinity;
  const failover = (async () => {
    await new Promise((r) => setTimeout(r, 200));
    await forceFailover(setup);
    failedOverAt = performance.now();
  })();
  const { samples, maxLagMs } = await runLoad<Decision>(limiter, { concurrency: 5, stop: () => performance.now() > failedOverAt + 3_000 });
  await failover;
  expect(Math.max(...samples.map((s) => s.elapsedMs))).toBeLessThanOrEqual(200 + 20 + maxLagMs);
  for (const { decision } of samples) {
    expect(decision.source === 'redis' ? decision.allowed : decision.reason === 'store-unavailable').toBe(true);
  }
  const late = samples.filter((s) => s.startedAt > failedOverAt + 2_000);
  expect(late.length).toBeGreaterThan(10);
  expect(late.every((s) => s.decision.source === 'redis')).toBe(true);
  // The client now talks to the former replica, and the counts survived (replicated before the switch).
  expect(await client.call('ROLE').then((r) => (r as string[])[0])).toBe('master');
  expect(/tcp_port:(\d+)/.exec(await client.info('server'))?.[1]).toBe(String(setup.replica.port));
  const admitted = samples.filter((s) => s.decision.source === 'redis').length + 1;
  const left = (await limiter.peek('load')).remaining;
  expect(1_000_000 - left).toBeGreaterThan(admitted / 2);
  expect(1_000_000 - left).toBeLessThanOrEqual(admitted);
}, 60_000);
