import Fastify, { type FastifyInstance } from 'fastify';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import rateLimit, { RateLimitError, type RateLimitPluginOptions, type RouteRateLimitOptions } from '@floodgate/fastify';

/*
 * A route's limiter inherits from the plugin every core option that decides where and how its state lives
 * (cluster layout, algorithm, penalty, block cache, memory bound), unless it sets its own; a `cluster`
 * that would split a prefix's block keys is a ConfigError.
 */
const redis = connect();
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

/** An app with the plugin (global: false) and one route `/` with `route` as its config.rateLimit; denials' decisions are collected. */
async function appWith(
  plugin: RateLimitPluginOptions,
  route: RouteRateLimitOptions,
  seen: RateLimitError[] = [],
): Promise<FastifyInstance> {
  const app = Fastify();
  apps.push(app);
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof RateLimitError) seen.push(error);
    return reply.send(error);
  });
  await app.register(rateLimit, plugin);
  app.get('/', { config: { rateLimit: route } }, async () => ({ ok: true }));
  await app.ready();
  return app;
}

test("a route limiter sees a block set by another limiter of the plugin's colocated prefix", async () => {
  const prefix = uniquePrefix('fyinh');
  const app = await appWith(
    { redis, prefix, global: false, cluster: { colocate: true } },
    { name: 'route', limits: { limit: 5, window: '1m' } },
  );
  const admin = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix,
    name: 'admin',
    cluster: { colocate: true },
    limits: { limit: 1, window: '1s' },
  });
  expect((await request(app.server).get('/')).status).toBe(200);
  await admin.block('ip:127.0.0.1', { duration: '1m', reason: 'abuse' });
  const blocked = await request(app.server).get('/');
  expect(blocked.status).toBe(429);
  await admin.close();
});

test('algorithm and penalty are inherited: token-bucket keys, and every denial goes to Redis to be counted', async () => {
  const prefix = uniquePrefix('fyinh');
  const seen: RateLimitError[] = [];
  const app = await appWith(
    { redis, prefix, global: false, algorithm: 'token-bucket', penalty: true },
    { name: 'route', limits: { limit: 1, window: '1m' } },
    seen,
  );
  for (let i = 0; i < 3; i++) await request(app.server).get('/');
  // With penalty a denied check must reach Redis (it consumes), so the block cache never answers it.
  expect(seen.map((e) => e.decision.source)).toEqual(['redis', 'redis']);
  // The token bucket's key, not the default sliding window's.
  expect(await redis.exists(`${prefix}:route:tb1:{ip:127.0.0.1}`, `${prefix}:route:sw2:{ip:127.0.0.1}`)).toBe(1);
  expect(await redis.exists(`${prefix}:route:tb1:{ip:127.0.0.1}`)).toBe(1);
});

test('blockCache: false is inherited: a hammering client is asked of Redis every time', async () => {
  const seen: RateLimitError[] = [];
  const app = await appWith(
    { redis, prefix: uniquePrefix('fyinh'), global: false, blockCache: false },
    { name: 'route', limits: { limit: 1, window: '1m' } },
    seen,
  );
  for (let i = 0; i < 3; i++) await request(app.server).get('/');
  expect(seen.map((e) => e.decision.source)).toEqual(['redis', 'redis']);
});

test('a route sets its own: algorithm overrides, a cluster layout that would split the prefix is a ConfigError', async () => {
  const prefix = uniquePrefix('fyinh');
  const seen: RateLimitError[] = [];
  const app = await appWith(
    { redis, prefix, global: false, algorithm: 'token-bucket', penalty: true },
    { name: 'own', algorithm: 'fixed-window', penalty: false, limits: { limit: 1, window: '1m' } },
    seen,
  );
  for (let i = 0; i < 3; i++) await request(app.server).get('/');
  expect(seen.map((e) => e.decision.source)).toEqual(['redis', 'cache']);

  const split = Fastify();
  apps.push(split);
  await split.register(rateLimit, { redis, prefix, global: false, cluster: { colocate: true } });
  expect(() =>
    split.get(
      '/',
      { config: { rateLimit: { name: 'x', cluster: { colocate: false }, limits: { limit: 1, window: '1m' } } } },
      async () => 1,
    ),
  ).toThrow(expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'config.rateLimit.cluster' }));
  // Its own prefix has its own block keys: no conflict.
  split.get(
    '/own',
    { config: { rateLimit: { name: 'y', prefix: `${prefix}-b`, cluster: { colocate: false }, limits: { limit: 1, window: '1m' } } } },
    async () => 1,
  );
  await split.ready();
});
