import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit, { RateLimitError, type RateLimitHookHandler, type RouteRateLimitOptions } from '@floodgate/fastify';

/*
 * docs/migrating/fastify-rate-limit.md, checked: @fastify/rate-limit's README examples as the guide rewrites
 * them, against real Fastify apps and the test Redis, asserting what @fastify/rate-limit documents.
 */
const redis = connect();
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

function app(): FastifyInstance {
  const made = Fastify();
  apps.push(made);
  return made;
}
/** app.rateLimit(...) typed as @floodgate/fastify declares it (this repository's bench also installs @fastify/rate-limit, whose declaration would win here). */
const limitHook = (a: FastifyInstance, options?: RouteRateLimitOptions): RateLimitHookHandler =>
  (a.rateLimit as unknown as (o?: RouteRateLimitOptions) => RateLimitHookHandler)(options);
const statuses = async (a: FastifyInstance, n: number, path = '/', set: Record<string, string> = {}): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(a.server).get(path).set(set)).status);
  return out;
};

test("usage: { max: 100, timeWindow: '1 minute' }; request 101 gets 429, the documented body, x-ratelimit-* and retry-after", async () => {
  const fastify = app();
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 100, window: '1m' }, headers: 'legacy' });
  fastify.get('/', async () => ({ hello: 'world' }));
  await fastify.ready();
  const first = await request(fastify.server).get('/');
  expect(first.headers['x-ratelimit-limit']).toBe('100');
  expect(first.headers['x-ratelimit-remaining']).toBe('99');
  // Floodgate's X-RateLimit-Reset is the epoch second of the reset (express-rate-limit's legacy form), not a delta.
  expect(Number(first.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
  expect(new Set(await statuses(fastify, 99))).toEqual(new Set([200]));
  const denied = await request(fastify.server).get('/');
  expect(denied.status).toBe(429);
  expect(denied.headers['x-ratelimit-remaining']).toBe('0');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(denied.body).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds?$/),
  });
});

test('setErrorHandler sees the 429 (a RateLimitError with statusCode) and can change its message', async () => {
  const fastify = app();
  fastify.setErrorHandler(function (error, _request, reply) {
    if (error instanceof RateLimitError && error.statusCode === 429) {
      reply.code(429);
      error.message = 'You hit the rate limit! Slow down please!';
    }
    reply.send(error);
  });
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 1, window: '1m' } });
  fastify.get('/', async () => ({ hello: 'world' }));
  await fastify.ready();
  await request(fastify.server).get('/');
  const denied = await request(fastify.server).get('/');
  expect(denied.status).toBe(429);
  expect(denied.body.message).toBe('You hit the rate limit! Slow down please!');
});

test('404s: setNotFoundHandler({ preHandler: fastify.rateLimit() }) with { max: 2, timeWindow: 1000 }', async () => {
  const fastify = app();
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 2, window: '1m' } }); // timeWindow: 1000 in the README; a minute here, so a slow machine cannot straddle it
  fastify.setNotFoundHandler({ preHandler: limitHook(fastify) }, function (_request, reply) {
    reply.code(404).send({ hello: 'world' });
  });
  await fastify.ready();
  expect(await statuses(fastify, 3, '/guess')).toEqual([404, 404, 429]);
});

test('route options: global: false with routes of their own, rateLimit: false, and a group shared by two routes (groupId)', async () => {
  const fastify = app();
  const prefix = uniquePrefix('frl');
  // global: false, max: 3000, allowList: ['192.168.0.10'], redis
  await fastify.register(rateLimit, { redis, prefix, global: false, skip: (req: FastifyRequest) => ['192.168.0.10'].includes(req.ip) });
  fastify.get('/', { config: { rateLimit: { name: 'root', limits: { limit: 3, window: '1m' } } } }, async () => ({ hello: 'root' }));
  fastify.get('/public', async () => ({ hello: 'public' }));
  // groupId: 'OTP' on both routes -> one shared limiter
  const otp = createLimiter({ redis, prefix, name: 'otp', limits: { limit: 3, window: '1m' } });
  fastify.get('/otp/send', { config: { rateLimit: { limiter: otp } } }, async () => 'sent');
  fastify.get('/otp/resend', { config: { rateLimit: { limiter: otp } } }, async () => 'resent');
  await fastify.ready();
  expect(await statuses(fastify, 4, '/')).toEqual([200, 200, 200, 429]);
  expect(await statuses(fastify, 4, '/public')).toEqual([200, 200, 200, 200]);
  expect([...(await statuses(fastify, 2, '/otp/send')), ...(await statuses(fastify, 2, '/otp/resend'))]).toEqual([200, 200, 200, 429]);
  await otp.close();
});

test('a global limit with rateLimit: false on /public and a tighter /private (Floodgate: the route ADDS to the global one)', async () => {
  const fastify = app();
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 100, window: '1m' } });
  fastify.get('/', async () => 'root');
  fastify.get('/public', { config: { rateLimit: false } }, async () => 'public');
  fastify.get('/private', { config: { rateLimit: { name: 'private', limits: { limit: 9, window: '1m' } } } }, async () => 'private');
  await fastify.ready();
  const res = await request(fastify.server).get('/private');
  expect(res.headers['ratelimit-policy']).toBe('"1m";q=100;w=60, "private-1m";q=9;w=60');
  const rest = await statuses(fastify, 9, '/private');
  expect(rest.slice(0, 8)).toEqual(Array(8).fill(200));
  expect(rest[8]).toBe(429);
  const pub = await request(fastify.server).get('/public');
  expect(pub.status).toBe(200);
  expect(pub.headers['ratelimit']).toBeUndefined();
});

test('keyGenerator -> identify; max(request, key) -> cost; errorResponseBuilder -> message; hook: preHandler', async () => {
  const fastify = app();
  fastify.decorateRequest('userId', '');
  fastify.addHook('preHandler', async (req: FastifyRequest & { userId?: string }) => {
    const { userId } = req.query as { userId?: string };
    if (userId) req.userId = userId;
  });
  await fastify.register(rateLimit, {
    redis,
    prefix: uniquePrefix('frl'),
    hook: 'preHandler',
    limits: { limit: 6, window: '1m' },
    // keyGenerator: (request) => request.userId || request.ip
    identify: (req, defaults) => ((req as { userId?: string }).userId ? `user:${(req as { userId?: string }).userId}` : defaults),
    // max: async (request, key) => (key === 'pro' ? 3 : 2): one limit, pro requests cost 2 of 6, others 3
    cost: (req) => ((req as { userId?: string }).userId === 'pro' ? 2 : 3),
    message: (_req, decision) => ({
      statusCode: 429,
      error: 'Too Many Requests',
      message: `I only allow ${decision.limit} units per minute to this Website. Try again soon.`,
      expiresIn: decision.retryAfterMs,
    }),
  });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  expect(await statuses(fastify, 4, '/?userId=pro')).toEqual([200, 200, 200, 429]);
  expect(await statuses(fastify, 3, '/?userId=free')).toEqual([200, 200, 429]);
  const denied = await request(fastify.server).get('/?userId=free');
  expect(denied.body).toMatchObject({ statusCode: 429, message: 'I only allow 6 units per minute to this Website. Try again soon.' });
  expect(denied.body.expiresIn).toBeGreaterThan(0);
});
