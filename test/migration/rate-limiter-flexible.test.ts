import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { createClient } from 'redis';
import { ConfigError, createLimiter, type LimiterOptions } from '@floodgate/core';
import { closeAfterEach, connect, serveHttp, startRedis, testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import fastifyRateLimit from '@floodgate/fastify';
import { rateLimit as koaRateLimit } from '@floodgate/koa';

/*
 * docs/migrating/rate-limiter-flexible.md, checked: rate-limiter-flexible's README and wiki examples as the
 * guide rewrites them, and every row of its tables, against the test Redis (and real Express, Fastify and
 * Koa apps, over sockets, for its middleware recipes).
 */
const redis = connect();
const closed = closeAfterEach();

/** A limiter closed after the test. */
function limiterOf(options: Partial<LimiterOptions>): ReturnType<typeof createLimiter> {
  return closed(createLimiter({ redis, prefix: uniquePrefix('rlf'), ...options } as LimiterOptions));
}

test('basic: { points: 6, duration: 1 }, consume(ip, 2): three pass, the fourth is refused with the wait', async () => {
  const at = Date.UTC(2026, 0, 1, 0, 0, 0, 100);
  const limiter = limiterOf({ limits: { limit: 6, window: '1s' }, algorithm: 'fixed-window', clock: () => at });
  const results = [];
  for (let i = 0; i < 4; i++) results.push(await limiter.check('ip:203.0.113.7', { cost: 2 }));
  expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
  // remainingPoints -> remaining; msBeforeNext -> retryAfterMs (denied) or resetMs; a refusal resolves, it does not reject.
  expect(results.map((r) => r.remaining)).toEqual([4, 2, 0, 0]);
  expect(results[3]).toMatchObject({ reason: 'limit', retryAfterMs: 900, resetMs: 900, resetAt: Date.UTC(2026, 0, 1, 0, 0, 1) });
});

test('the Express middleware recipe (10 per second by req.ip, 429 "Too Many Requests") is rateLimit()', async () => {
  const limiter = expressRateLimit({
    redis,
    prefix: uniquePrefix('rlf'),
    name: 'middleware',
    limits: { limit: 10, window: '1m' },
    message: 'Too Many Requests',
  });
  closed(limiter);
  const app = express();
  app.use(limiter);
  app.get('/', (_req, res) => void res.send('ok'));
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closed(served);
  const out: number[] = [];
  for (let i = 0; i < 11; i++) out.push((await request(served.url).get('/')).status);
  expect(out).toEqual([...Array(10).fill(200), 429]);
  const denied = await request(served.url).get('/');
  expect(denied.body.message).toBe('Too Many Requests');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
});

test('the Koa middleware recipe (consume(ctx.ip), 429) is rateLimit() for Koa', async () => {
  const limiter = koaRateLimit({ redis, prefix: uniquePrefix('rlf'), limits: { limit: 2, window: '1m' } });
  closed(limiter);
  const app = new Koa();
  app.use(limiter).use((ctx) => {
    ctx.body = 'ok';
  });
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closed(served);
  const out: number[] = [];
  for (let i = 0; i < 3; i++) out.push((await request(served.url).get('/')).status);
  expect(out).toEqual([200, 200, 429]);
});

test('login protection: get() before, consume() on a failure, delete() on success -> peek, check, reset; blockDuration -> block()', async () => {
  // limiterConsecutiveFailsByUsernameAndIP: points 10, duration 90 days, blockDuration 1 hour
  const fails = limiterOf({ name: 'login-fails', limits: { limit: 10, window: '90d' }, algorithm: 'fixed-window' });
  const key = 'login:ada_203.0.113.7';
  const attempt = async (password: string): Promise<number> => {
    const state = await fails.peek(key);
    if (!state.allowed) return 429;
    if (password === 'right') {
      await fails.reset(key);
      return 200;
    }
    const d = await fails.check(key);
    if (!d.allowed || d.remaining === 0) await fails.block(key, { duration: '1h', reason: 'too many failed logins' });
    return 401;
  };
  for (let i = 0; i < 5; i++) expect(await attempt('wrong')).toBe(401);
  // A successful login forgets the failures.
  expect(await attempt('right')).toBe(200);
  expect((await fails.peek(key)).remaining).toBe(10);
  const out: number[] = [];
  for (let i = 0; i < 11; i++) out.push(await attempt('wrong'));
  expect(out).toEqual([...Array(10).fill(401), 429]);
  expect(await attempt('right')).toBe(429);
  expect(await fails.peek(key)).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'too many failed logins' });
  // Support lifts it: unblock() ends the block, reset() forgets the counts (neither does the other's job).
  await fails.unblock(key);
  await fails.reset(key);
  expect(await attempt('right')).toBe(200);
});

test('RateLimiterUnion (1 per second and 5 per minute) is one limiter with two rules; all or nothing, unlike the union', async () => {
  const at = Date.UTC(2026, 0, 1, 0, 0, 0, 0);
  let now = at;
  const limiter = limiterOf({
    algorithm: 'fixed-window',
    clock: () => now,
    limits: [
      { limit: 1, window: '1s' },
      { limit: 5, window: '1m' },
    ],
  });
  expect((await limiter.check('ip:1')).allowed).toBe(true);
  const denied = await limiter.check('ip:1');
  expect(denied.allowed).toBe(false);
  // The refused check consumed nothing from the minute rule: 4 left there, not 3.
  expect(denied.states.find((s) => s.windowMs === 60_000)?.remaining).toBe(4);
  now = at + 1000;
  expect((await limiter.check('ip:1')).allowed).toBe(true);
});

test('authorized vs anonymous (1 point per user, 30 per anonymous IP of 300 per minute) is cost', async () => {
  const limiter = limiterOf({ limits: { limit: 300, window: '1m' } });
  const consume = (req: { userId?: string; ip: string }) =>
    limiter.check(req.userId ? `user:${req.userId}` : `ip:${req.ip}`, { cost: req.userId ? 1 : 30 });
  const anonymous = [];
  for (let i = 0; i < 11; i++) anonymous.push((await consume({ ip: '198.51.100.1' })).allowed);
  expect(anonymous).toEqual([...Array(10).fill(true), false]);
  expect((await consume({ userId: '42', ip: '198.51.100.1' })).remaining).toBe(299);
});

test('insuranceLimiter -> failure: "local": with Redis gone, an in-process limiter with the same rules decides', async () => {
  const server = await startRedis();
  const down = connect(server.url);
  const limiter = createLimiter({
    redis: down,
    prefix: uniquePrefix('rlf'),
    limits: { limit: 2, window: '1m' },
    failure: 'local',
    timeoutMs: 100,
    logger: { warn: () => undefined },
  });
  closed(limiter);
  expect((await limiter.check('ip:1')).source).toBe('redis');
  await server.stop();
  const during = [];
  for (let i = 0; i < 3; i++) during.push(await limiter.check('ip:1'));
  expect(during.map((d) => [d.source, d.allowed])).toEqual([
    ['fallback', true],
    ['fallback', true],
    ['fallback', false],
  ]);
  down.disconnect();
});

test('inMemoryBlockOnConsumed -> the block cache (on by default); RateLimiterQueue.removeTokens -> acquire()', async () => {
  const limiter = limiterOf({ limits: { limit: 1, window: '1m' } });
  await limiter.check('ip:1');
  expect((await limiter.check('ip:1')).source).toBe('redis');
  expect((await limiter.check('ip:1')).source).toBe('cache');
  const queue = limiterOf({ limits: { limit: 2, window: '1s' }, algorithm: 'sliding-log' });
  const t0 = Date.now();
  for (let i = 0; i < 3; i++) expect((await queue.acquire('api:geocoder', { maxWaitMs: 5000 })).allowed).toBe(true);
  // The third waited for the first to leave the window.
  expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
});

test('the Fastify recipe is app.register(rateLimit, { redis, limits })', async () => {
  const app = closed(Fastify());
  await app.register(fastifyRateLimit, { redis, prefix: uniquePrefix('rlf'), limits: { limit: 2, window: '1m' } });
  app.get('/', async () => 'ok');
  await app.ready();
  const out: number[] = [];
  for (let i = 0; i < 3; i++) out.push((await request(app.server).get('/')).status);
  expect(out).toEqual([200, 200, 429]);
});

test("duration (seconds) -> window in ms or '1s', '15m', '90d', up to a year (366 days); duration: 0 -> a year", () => {
  const limiter = limiterOf({
    limits: [
      { limit: 1, window: 1000 },
      { limit: 1, window: '15m' },
      { limit: 1, window: '90d' },
      { limit: 1, window: '365d' },
    ],
  });
  expect(limiter.rules.map((r) => r.windowMs)).toEqual([1000, 900_000, 7_776_000_000, 31_536_000_000]);
  expect(() => createLimiter({ limits: { limit: 1, window: '367d' } })).toThrow(ConfigError);
});

test('keyPrefix -> name (and prefix): two limiters with one prefix and name but other rules are a ConfigError', () => {
  const prefix = uniquePrefix('rlf');
  limiterOf({ prefix, name: 'middleware', limits: { limit: 6, window: '1s' } });
  expect(() => createLimiter({ redis, prefix, name: 'middleware', limits: { limit: 7, window: '1s' } })).toThrow(
    expect.objectContaining({ option: 'name' }),
  );
  // A prefix is one key segment: the ':' after it is Floodgate's.
  expect(() => createLimiter({ redis, prefix: 'rlflx:', limits: { limit: 1, window: '1s' } })).toThrow(
    expect.objectContaining({ option: 'prefix', message: expect.stringContaining("prefix 'rlflx'") }),
  );
});

test('storeClient -> redis: ioredis, node-redis (useRedisPackage) or omitted for the in-memory store (RateLimiterMemory)', async () => {
  const nodeRedis = createClient({ url: testRedisUrl() });
  nodeRedis.on('error', () => undefined);
  await nodeRedis.connect();
  closed({ close: () => nodeRedis.destroy() });
  for (const store of [nodeRedis, undefined]) {
    const limiter = limiterOf({ redis: store as LimiterOptions['redis'], limits: { limit: 2, window: '1m' } });
    const got = [];
    for (let i = 0; i < 3; i++) got.push(await limiter.check('ip:203.0.113.7'));
    expect(got.map((d) => [d.allowed, d.source])).toEqual([
      [true, store ? 'redis' : 'memory'],
      [true, store ? 'redis' : 'memory'],
      [false, store ? 'redis' : 'memory'],
    ]);
  }
});

test('blockDuration after repeated refusals -> lockout; inMemoryBlockOnConsumed: 0 -> blockCache: false', async () => {
  const limiter = limiterOf({ limits: { limit: 1, window: '1m' }, lockout: { after: 2, within: '1m', duration: '1h', scope: 'user' } });
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await limiter.check('user:ada'));
  expect(got.map((d) => [d.allowed, d.reason, d.blockReason])).toEqual([
    [true, undefined, undefined],
    [false, 'limit', undefined],
    [false, 'blocked', 'lockout'],
    [false, 'blocked', 'lockout'],
  ]);
  expect(got[3]!.retryAfterMs).toBeGreaterThan(3_500_000);
  const uncached = limiterOf({ limits: { limit: 1, window: '1m' }, blockCache: false });
  for (let i = 0; i < 3; i++) await uncached.check('ip:1');
  expect((await uncached.check('ip:1')).source).toBe('redis');
});

test('execEvenly -> token-bucket (admissions spread over the window); customIncrTtlLuaScript -> algorithm', async () => {
  // 2 per second on average, 1 at once: a second request right after the first waits half a second.
  const even = limiterOf({ algorithm: 'token-bucket', limits: { limit: 2, window: '1s', burst: 1 } });
  expect((await even.check('ip:1')).allowed).toBe(true);
  const second = await even.check('ip:1');
  expect(second.allowed).toBe(false);
  expect(second.retryAfterMs).toBeGreaterThan(300);
  expect(second.retryAfterMs).toBeLessThanOrEqual(500);
  for (const algorithm of ['sliding-window', 'fixed-window', 'sliding-log', 'token-bucket'] as const) {
    const limiter = limiterOf({ algorithm, limits: { limit: 3, window: '1m' } });
    const allowed = [];
    for (let i = 0; i < 4; i++) allowed.push((await limiter.check('ip:1')).allowed);
    expect([algorithm, allowed]).toEqual([algorithm, [true, true, true, false]]);
  }
});

test('rejectIfRedisNotReady / RLWrapperTimeouts -> timeoutMs + failure: a check never waits longer, the policy answers', async () => {
  const server = await startRedis();
  const down = connect(server.url);
  await server.stop();
  const limiter = limiterOf({
    redis: down,
    limits: { limit: 5, window: '1m' },
    timeoutMs: 200,
    failure: 'closed',
    logger: { warn: () => undefined },
  });
  const started = performance.now();
  const d = await limiter.check('ip:1');
  expect([d.allowed, d.source, d.reason]).toEqual([false, 'fallback', 'store-unavailable']);
  expect(performance.now() - started).toBeLessThan(2_000);
  down.disconnect();
});

test('penalty(key, points) -> penalty: true; reward(key, points) -> refund(decision); consumedPoints -> limit - remaining', async () => {
  const strict = limiterOf({ limits: { limit: 3, window: '1m' }, penalty: true, blockCache: false });
  const tries = [];
  for (let i = 0; i < 5; i++) tries.push(await strict.check('ip:1'));
  expect(tries.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
  const rewarded = limiterOf({ limits: { limit: 3, window: '1m' }, refunds: true });
  const d = await rewarded.check('ip:2', { cost: 2 });
  expect(d.limit - d.remaining).toBe(2);
  expect(await rewarded.refund(d)).toBe(true);
  expect((await rewarded.peek('ip:2')).remaining).toBe(3);
});

test('getKey(key) -> <prefix>:<name>:<algorithm>:{<identifier>}; deleteInMemoryBlockedAll -> reset() / unblock()', async () => {
  const prefix = uniquePrefix('rlf');
  const limiter = limiterOf({ prefix, name: 'api', limits: { limit: 1, window: '1m' } });
  await limiter.check('ip:203.0.113.7');
  expect(await redis.exists(`${prefix}:api:sw2:{ip:203.0.113.7}`)).toBe(1);
  // Refused, then remembered in process: reset() clears the count and this process's memory of the refusal.
  expect((await limiter.check('ip:203.0.113.7')).allowed).toBe(false);
  expect((await limiter.check('ip:203.0.113.7')).source).toBe('cache');
  await limiter.reset('ip:203.0.113.7');
  expect((await limiter.check('ip:203.0.113.7')).allowed).toBe(true);
});

test('BurstyRateLimiter (2 per second, bursts of 5) -> token-bucket with burst', async () => {
  const bursty = limiterOf({ algorithm: 'token-bucket', limits: { limit: 2, window: '1s', burst: 5 } });
  const burst = [];
  for (let i = 0; i < 6; i++) burst.push((await bursty.check('ip:1')).allowed);
  expect(burst).toEqual([true, true, true, true, true, false]);
});

test('RLWrapperBlackAndWhite -> allow / deny lists and setLists()', async () => {
  const limiter = limiterOf({ limits: { limit: 1, window: '1m' }, allow: ['ip:10.0.0.1'], deny: ['ip:10.0.0.66'] });
  const twice = async (id: string): Promise<[boolean, string | undefined][]> => {
    const out: [boolean, string | undefined][] = [];
    for (let i = 0; i < 2; i++) {
      const d = await limiter.check(id);
      out.push([d.allowed, d.reason]);
    }
    return out;
  };
  expect(await twice('ip:10.0.0.1')).toEqual([
    [true, undefined],
    [true, undefined],
  ]);
  expect(await twice('ip:10.0.0.66')).toEqual([
    [false, 'listed'],
    [false, 'listed'],
  ]);
  limiter.setLists({ allow: [], deny: ['ip:10.0.0.1'] });
  expect(await twice('ip:10.0.0.1')).toEqual([
    [false, 'listed'],
    [false, 'listed'],
  ]);
});
