import express from 'express';
import Koa from 'koa';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, serveHttp, startRedis, uniquePrefix } from '@floodgate/testing';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import { rateLimit as koaRateLimit } from '@floodgate/koa';

/*
 * docs/migrating/rate-limiter-flexible.md, checked: rate-limiter-flexible's README and wiki examples as the
 * guide rewrites them, against the test Redis (and real Express and Koa apps for its middleware recipes).
 */
const redis = connect();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});
afterAll(closeClients);

/** A limiter closed after the test. */
function limiterOf(options: Parameters<typeof createLimiter>[0]): ReturnType<typeof createLimiter> {
  const limiter = createLimiter({ redis, prefix: uniquePrefix('rlf'), ...options });
  closers.push(() => limiter.close());
  return limiter;
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
  closers.push(limiter.close);
  const app = express();
  app.use(limiter);
  app.get('/', (_req, res) => void res.send('ok'));
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closers.push(served.close);
  const out: number[] = [];
  for (let i = 0; i < 11; i++) out.push((await request(served.url).get('/')).status);
  expect(out).toEqual([...Array(10).fill(200), 429]);
  const denied = await request(served.url).get('/');
  expect(denied.body.message).toBe('Too Many Requests');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
});

test('the Koa middleware recipe (consume(ctx.ip), 429) is rateLimit() for Koa', async () => {
  const limiter = koaRateLimit({ redis, prefix: uniquePrefix('rlf'), limits: { limit: 2, window: '1m' } });
  closers.push(limiter.close);
  const app = new Koa();
  app.use(limiter).use((ctx) => {
    ctx.body = 'ok';
  });
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closers.push(served.close);
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
  closers.push(() => limiter.close());
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
