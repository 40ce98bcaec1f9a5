import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import request from 'supertest';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit, { type RateLimitHookHandler, type RouteRateLimitOptions } from '@floodgate/fastify';

/*
 * Several registrations of the plugin in one scope (or a scope and its child), as @fastify/rate-limit allows
 * ("Allow multiple different rate limiter registrations"): each registration limits with its own limiter;
 * the `rateLimit` decorator is declared once (the first registration's); a route's `config.rateLimit` is one
 * limiter, made by the first registration that sees the route, so the route's requests count once.
 */
const redis = connect();
const closed = closeAfterEach();
const app = (): FastifyInstance => closed(Fastify());
const statuses = async (a: FastifyInstance, n: number, path = '/'): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(a.server).get(path)).status);
  return out;
};
/** app.rateLimit(...) typed as @floodgate/fastify declares it (the bench's @fastify/rate-limit declares it too). */
const limitHook = (a: FastifyInstance, options?: RouteRateLimitOptions): RateLimitHookHandler =>
  (a.rateLimit as unknown as (o?: RouteRateLimitOptions) => RateLimitHookHandler)(options);

test("two registrations in one scope, each skipping the other's routes (the peer's own test): each limits its routes", async () => {
  const fastify = app();
  const prefix = uniquePrefix('fyreg');
  const url = (request: FastifyRequest): string => request.routeOptions.url ?? '';
  await fastify.register(rateLimit, { redis, prefix, name: 'main', limits: { limit: 1, window: '1m' }, skip: (r) => url(r) === '/test' });
  await fastify.register(rateLimit, { redis, prefix, name: 'test', limits: { limit: 1, window: '1m' }, skip: (r) => url(r) !== '/test' });
  fastify.get('/', async () => 'hello!');
  fastify.get('/test', async () => 'hello from another route!');
  await fastify.ready();
  expect(await statuses(fastify, 2, '/')).toEqual([200, 429]);
  const test = await request(fastify.server).get('/test');
  expect([test.status, test.headers['ratelimit-policy']]).toEqual([200, '"test-1m";q=1;w=60']);
  expect(await statuses(fastify, 1, '/test')).toEqual([429]);
});

test('both registrations limit a route they both cover; its config.rateLimit is one limiter, counted once', async () => {
  const fastify = app();
  const prefix = uniquePrefix('fyreg');
  await fastify.register(rateLimit, { redis, prefix, name: 'per-minute', limits: { limit: 100, window: '1m' } });
  await fastify.register(rateLimit, { redis, prefix, name: 'per-hour', limits: { limit: 1000, window: '1h' } });
  fastify.get('/search', { config: { rateLimit: { name: 'search', limits: { limit: 3, window: '1m' } } } }, async () => 'found');
  await fastify.ready();
  const first = await request(fastify.server).get('/search');
  expect(first.headers['ratelimit-policy']).toBe('"per-minute-1m";q=100;w=60, "search-1m";q=3;w=60, "per-hour-1h";q=1000;w=3600');
  // Counted once by `search`: the 4th is refused (a second `search` limiter on the same keys refused the 2nd).
  expect([first.status, ...(await statuses(fastify, 3, '/search'))]).toEqual([200, 200, 200, 429]);
});

test('the rateLimit decorator is declared once, and runs the first registration’s limiter', async () => {
  const fastify = app();
  const prefix = uniquePrefix('fyreg');
  await fastify.register(rateLimit, { redis, prefix, name: 'first', limits: { limit: 2, window: '1m' } });
  await fastify.register(rateLimit, { redis, prefix, name: 'second', limits: { limit: 50, window: '1m' } });
  fastify.setNotFoundHandler({ preHandler: limitHook(fastify) }, (_request, reply) => reply.code(404).send({ error: 'Not Found' }));
  await fastify.ready();
  const guess = await request(fastify.server).get('/guess');
  expect([guess.status, guess.headers['ratelimit-policy']]).toEqual([404, '"first-1m";q=2;w=60']);
  expect(await statuses(fastify, 2, '/guess')).toEqual([404, 429]);
});

test('a registration in a child scope beside one in its parent: both limit the child’s routes, its config.rateLimit once', async () => {
  const fastify = app();
  const prefix = uniquePrefix('fyreg');
  await fastify.register(rateLimit, { redis, prefix, name: 'outer', limits: { limit: 10, window: '1m' } });
  fastify.get('/outer', async () => 'outer');
  await fastify.register(async (child) => {
    await child.register(rateLimit, { redis, prefix, name: 'inner', limits: { limit: 3, window: '1m' } });
    child.get('/inner', async () => 'inner');
    child.get('/inner/search', { config: { rateLimit: { name: 'search', limits: { limit: 2, window: '1m' } } } }, async () => 'found');
  });
  await fastify.ready();
  const search = await request(fastify.server).get('/inner/search');
  // Made by the outer registration (it sees the route first), and counted once: the 3rd is refused, not the 2nd.
  expect(search.headers['ratelimit-policy']).toBe('"outer-1m";q=10;w=60, "search-1m";q=2;w=60, "inner-1m";q=3;w=60');
  expect([search.status, ...(await statuses(fastify, 2, '/inner/search'))]).toEqual([200, 200, 429]);
  // `inner` counted the two admitted searches: one more of its 3 fits.
  expect(await statuses(fastify, 2, '/inner')).toEqual([200, 429]);
  const outer = await request(fastify.server).get('/outer');
  expect([outer.status, outer.headers['ratelimit-policy']]).toEqual([200, '"outer-1m";q=10;w=60']);
});
