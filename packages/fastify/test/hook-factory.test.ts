import Fastify, { type FastifyInstance } from 'fastify';
import request from 'supertest';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit, { type RateLimitHookHandler, type RateLimitPluginOptions, type RouteRateLimitOptions } from '@floodgate/fastify';

/*
 * app.rateLimit(options?): a hook for what the plugin's onRoute does not reach, above all the not-found
 * handler, so a client guessing URLs is limited (as @fastify/rate-limit's fastify.rateLimit() does).
 */
const redis = connect();
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

async function appWith(plugin: RateLimitPluginOptions, notFound: (app: FastifyInstance) => void): Promise<FastifyInstance> {
  const app = Fastify();
  apps.push(app);
  await app.register(rateLimit, plugin);
  app.get('/', async () => ({ ok: true }));
  notFound(app);
  await app.ready();
  return app;
}

/*
 * app.rateLimit(...) through a cast: the root tsconfig's program also sees the bench's @fastify/rate-limit,
 * whose own FastifyInstance.rateLimit declaration would be picked first. An application has only one.
 */
const hook = (app: FastifyInstance, options?: RouteRateLimitOptions): RateLimitHookHandler =>
  (app.rateLimit as unknown as (o?: RouteRateLimitOptions) => RateLimitHookHandler)(options);

const statuses = async (app: FastifyInstance, paths: string[]): Promise<number[]> => {
  const out: number[] = [];
  for (const path of paths) out.push((await request(app.server).get(path)).status);
  return out;
};

test("404s are not limited by onRoute hooks, but are with preHandler: hook(app), on the global limiter's budget", async () => {
  const open = await appWith({ redis, prefix: uniquePrefix('fynf'), limits: { limit: 2, window: '1m' } }, () => undefined);
  expect(await statuses(open, ['/a', '/b', '/c', '/d'])).toEqual([404, 404, 404, 404]);

  const limited = await appWith({ redis, prefix: uniquePrefix('fynf'), limits: { limit: 2, window: '1m' } }, (app) =>
    app.setNotFoundHandler({ preHandler: hook(app) }, async (_request, reply) => reply.code(404).send({ missing: true })),
  );
  expect(await statuses(limited, ['/a', '/b'])).toEqual([404, 404]);
  const third = await request(limited.server).get('/c');
  expect(third.status).toBe(429);
  expect(third.headers['retry-after']).toMatch(/^\d+$/);
  expect(third.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
  // One budget: the routes' global limiter saw those 404s.
  expect(await statuses(limited, ['/'])).toEqual([429]);
});

test('app.rateLimit(options) is a limiter of its own, inheriting from the plugin (redis, prefix, headers, ...)', async () => {
  const app = await appWith({ redis, prefix: uniquePrefix('fynf'), headers: 'legacy', limits: { limit: 10, window: '1m' } }, (a) =>
    a.setNotFoundHandler({ preHandler: hook(a, { name: 'notfound', limits: { limit: 1, window: '1m' } }) }, async (_r, reply) =>
      reply.code(404).send(),
    ),
  );
  const first = await request(app.server).get('/nope');
  expect(first.status).toBe(404);
  expect(first.headers['x-ratelimit-limit']).toBe('1');
  expect(await statuses(app, ['/nope', '/'])).toEqual([429, 200]);
});

test('with global: false, hook(app) uses the plugin options; without limits it is a ConfigError', async () => {
  const app = await appWith({ redis, prefix: uniquePrefix('fynf'), global: false, limits: { limit: 1, window: '1m' } }, (a) =>
    a.setNotFoundHandler({ preHandler: hook(a) }, async (_r, reply) => reply.code(404).send()),
  );
  expect(await statuses(app, ['/x', '/y', '/'])).toEqual([404, 429, 200]);

  const bare = Fastify();
  apps.push(bare);
  await bare.register(rateLimit, { redis, global: false });
  expect(() => hook(bare)).toThrow(expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'limits' }));
});
