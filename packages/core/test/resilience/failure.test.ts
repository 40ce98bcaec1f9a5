import Redis from 'ioredis';
import { createLimiter, type LimiterEvent, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, spawnRedis, startRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * The failure policies on a real redis-server that is paused, stopped, never there or out of memory, with
 * real ioredis clients: what the client and the server do in each case is what is tested here, by counts
 * and policy outcomes (no millisecond bound: a check that took the policy did not wait for Redis). How the
 * limiter reacts to each fault, deadline by deadline in virtual time, is test/failure.test.ts.
 */
// No unhandled rejection may escape: jest fails the running test on one.
afterAll(closeClients);

const limits = { limit: 2, window: '1h' } as const;
const quiet = { warn: () => undefined };

function limiterOn(redis: Redis, options: Partial<LimiterOptions> = {}) {
  return createLimiter({
    redis,
    prefix: uniquePrefix('fail'),
    algorithm: 'fixed-window',
    limits,
    timeoutMs: 2_000,
    logger: quiet,
    ...options,
  });
}

describe('Redis frozen (SIGSTOP, until SIGCONT): checks take the policy, and Redis decides again after', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    server = await spawnRedis();
  });
  afterAll(() => server.stop());

  test.each(['open', 'closed', 'local'] as const)('failure: %s', async (failure) => {
    const events: LimiterEvent[] = [];
    const client = connect(server.url);
    await client.ping();
    const limiter = limiterOn(client, { failure, timeoutMs: 200, onEvent: (e) => events.push(e) });
    expect((await limiter.check('ip:1.1.1.1')).source).toBe('redis');
    // Frozen until the checks have settled, whatever the machine's load: no reply can come before the deadline.
    server.freeze();
    const results = await Promise.all([1, 2, 3].map(() => limiter.check('ip:1.1.1.1')));
    server.thaw();
    // None waited for Redis: the policy answered each (or this process's own view of the identifier).
    expect(results.every((d) => d.source === 'fallback' || d.source === 'local')).toBe(true);
    for (const d of results) if (d.source === 'fallback') expect(['timeout', 'overload']).toContain(d.error?.kind);
    // 'open' admits at most the limit (2) from this process; a deadline this process's own starvation ran out is
    // overload, which 'open' sheds.
    if (failure === 'open') expect(results.filter((d) => d.allowed).length).toBeLessThanOrEqual(2);
    if (failure === 'closed') expect(results.every((d) => !d.allowed && d.reason === 'store-unavailable')).toBe(true);
    // The in-memory limiter with the same rules: limit 2, so the third local check is denied.
    if (failure === 'local') expect(results.filter((d) => d.allowed)).toHaveLength(2);
    expect(events.filter((e) => e.type === 'store-error').length).toBeGreaterThanOrEqual(failure === 'open' ? 2 : 3);
    expect((await limiter.check('ip:9.9.9.9')).source).toBe('redis');
    await limiter.close();
  });
});

describe('Redis gone', () => {
  test('a client that lost its connection is refused at once (unavailable, not a deadline), with nothing queued for later', async () => {
    const server = await startRedis();
    const redis = connect(server.url, { retryStrategy: () => 1000 });
    await redis.ping();
    const limiter = limiterOn(redis, { failure: 'closed' });
    expect((await limiter.check('ip:2.2.2.2')).source).toBe('redis');
    await server.stop();
    await new Promise<void>((resolve) => (redis.status === 'ready' ? redis.once('close', () => resolve()) : resolve()));
    const decision = await limiter.check('ip:2.2.2.2');
    expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable', error: { kind: 'unavailable' } });
    // Nothing was parked in ioredis's offline queue to run, counted, after a reconnect.
    expect((redis as unknown as { offlineQueue: { length: number } }).offlineQueue.length).toBe(0);
    await limiter.close();
  });

  test("with a default ioredis client (offline queue on, retries on): refused, never queued; 'open' admits the limit", async () => {
    const server = await startRedis();
    const redis = new Redis(server.url, { lazyConnect: false, disconnectTimeout: 100 });
    redis.on('error', () => undefined);
    const limiter = limiterOn(redis, { failure: 'open' });
    expect((await limiter.check('ip:3.3.3.3')).source).toBe('redis');
    await server.stop();
    const results = await Promise.all([1, 2, 3, 4].map(() => limiter.check('ip:3.3.3.3')));
    for (const decision of results) expect(decision.error?.kind).toBe('unavailable');
    // 'open' admits them, up to the limit (2) of the identifier from this process, and denies the rest here
    // (docs/security.md, "'open' admits no flood").
    expect(results.filter((d) => d.allowed && d.source === 'fallback')).toHaveLength(2);
    expect(results.filter((d) => !d.allowed).every((d) => d.source === 'local' && d.reason === 'limit')).toBe(true);
    await limiter.close();
    redis.disconnect();
  });

  test('a client still connecting for the first time is waited for, not failed open', async () => {
    const server = await startRedis();
    const redis = new Redis(server.url, { disconnectTimeout: 100 });
    redis.on('error', () => undefined);
    expect(redis.status).not.toBe('ready');
    // A deadline far above what the first connection takes: what is tested is the wait, not its length.
    const limiter = limiterOn(redis, { failure: 'closed', timeoutMs: 10_000 });
    const decisions = await Promise.all([1, 2, 3].map(() => limiter.check('ip:4.4.4.4')));
    expect(decisions.map((d) => d.source)).toEqual(['redis', 'redis', 'redis']);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    await limiter.close();
    redis.disconnect();
    await server.stop();
  });

  test('a client that never connects follows the policy once its first attempt fails', async () => {
    const server = await startRedis();
    const url = server.url;
    await server.stop();
    const redis = new Redis(url, { retryStrategy: () => 5000, disconnectTimeout: 100 });
    redis.on('error', () => undefined);
    const limiter = limiterOn(redis, { failure: 'closed' });
    const decision = await limiter.check('ip:5.5.5.5');
    expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
    await limiter.close();
    redis.disconnect();
  });
});

test("Redis's own error reply (OOM) maps to the policy and reaches onEvent, never a rejection", async () => {
  const server = await startRedis(['--maxmemory', '1mb', '--maxmemory-policy', 'noeviction']);
  const redis = connect(server.url);
  // Fill memory until writes are refused with OOM (how much that takes differs between servers and versions).
  const filler = 'x'.repeat(100_000);
  for (let i = 0; i < 500; i++) {
    const refused = await redis.set(`fill:${i}`, filler).then(
      () => false,
      (err: Error) => /OOM/.test(err.message),
    );
    if (refused) break;
  }
  const events: LimiterEvent[] = [];
  const warnings: string[] = [];
  const limiter = limiterOn(redis, { failure: 'closed', onEvent: (e) => events.push(e), logger: { warn: (m) => void warnings.push(m) } });
  const decision = await limiter.check('ip:6.6.6.6');
  expect(decision).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
  expect(decision.error?.kind).toBe('reply');
  expect(String((decision.error?.cause as Error).message)).toMatch(/OOM/);
  expect(events.map((e) => e.type)).toEqual(['store-error', 'decision']);
  expect(warnings).toHaveLength(1);
  await limiter.close();
  await server.stop();
});

test('health(): down while Redis is frozen, with the last error; degraded once it answers again', async () => {
  const server = await spawnRedis();
  const client = connect(server.url);
  await client.ping();
  // A deadline long enough that the command surely left this process in its first half, loaded or not: a
  // silent server, never this process's own backlog (overload, which is not 'down').
  const limiter = limiterOn(client, { timeoutMs: 1_000, limits: { limit: 5, window: '1m' } });
  await limiter.check('ip:1');
  server.freeze();
  await limiter.check('ip:1');
  const down = await limiter.health({ probe: false });
  server.thaw();
  expect(down.status).toBe('down');
  expect(down.lastError).toMatchObject({ kind: 'timeout' });
  expect((await limiter.check('ip:1')).source).toBe('redis');
  const back = await limiter.health({ probe: false });
  // Answering again; the timeout of a moment ago still marks it degraded.
  expect(back.status).toBe('degraded');
  await limiter.close();
  await server.stop();
});
