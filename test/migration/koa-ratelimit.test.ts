import Koa, { type Context, type Next } from 'koa';
import Router from '@koa/router';
import request from 'supertest';
import { closeClients, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit } from '@floodgate/koa';

/*
 * docs/migrating/koa-ratelimit.md, checked: koa-ratelimit's README examples (the Redis driver, the memory
 * driver, `throw`) as the guide rewrites them, against real Koa apps and the test Redis, asserting the
 * responses koa-ratelimit documents (and what the guide says differs).
 */
const redis = connect();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});
afterAll(closeClients);

async function serve(app: Koa): Promise<string> {
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closers.push(served.close);
  return served.url;
}

/** koa-ratelimit's custom header names, as a middleware that renames Floodgate's legacy headers on the way out. */
const renameHeaders =
  (names: { remaining: string; reset: string; total: string }) =>
  async (ctx: Context, next: Next): Promise<void> => {
    await next();
    for (const [from, to] of [
      ['X-RateLimit-Remaining', names.remaining],
      ['X-RateLimit-Reset', names.reset],
      ['X-RateLimit-Limit', names.total],
    ] as const) {
      const value = ctx.response.get(from);
      if (value) {
        ctx.remove(from);
        ctx.set(to, value);
      }
    }
  };

test('the Redis driver example: 100 per minute by ctx.ip, custom message and header names, whitelist, blacklist', async () => {
  const blacklisted = (ctx: Context): boolean => ctx.get('x-client') === 'bad';
  const app = new Koa();
  // blacklist -> your own middleware in front (a 403 before any counting)
  app.use(async (ctx, next) => {
    if (blacklisted(ctx)) ctx.throw(403, 'Forbidden');
    await next();
  });
  app.use(renameHeaders({ remaining: 'Rate-Limit-Remaining', reset: 'Rate-Limit-Reset', total: 'Rate-Limit-Total' }));
  const limiter = rateLimit({
    redis, // driver: 'redis', db: new Redis()
    prefix: uniquePrefix('koarl'), // namespace
    limits: { limit: 100, window: 60000 }, // max: 100, duration: 60000
    message: 'Sometimes You Just Have to Slow Down.', // errorMessage
    headers: 'legacy', // X-RateLimit-*; disableHeader: true -> headers: false
    skip: (ctx) => ctx.get('x-client') === 'internal', // whitelist
  });
  closers.push(limiter.close);
  app.use(limiter);
  app.use(async (ctx) => {
    ctx.body = 'Stuff!';
  });
  const url = await serve(app);

  const first = await request(url).get('/');
  expect(first.text).toBe('Stuff!');
  expect(first.headers['rate-limit-total']).toBe('100');
  expect(first.headers['rate-limit-remaining']).toBe('99');
  expect(Number(first.headers['rate-limit-reset'])).toBeGreaterThan(Date.now() / 1000);
  expect(first.headers['x-ratelimit-limit']).toBeUndefined();
  for (let i = 0; i < 99; i++) expect((await request(url).get('/')).status).toBe(200);
  const denied = await request(url).get('/');
  expect(denied.status).toBe(429);
  expect(denied.headers['rate-limit-remaining']).toBe('0');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  // Floodgate answers JSON; koa-ratelimit sent the message as text/plain.
  expect(denied.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: 'Sometimes You Just Have to Slow Down.' });
  expect((await request(url).get('/').set('x-client', 'internal')).status).toBe(200);
  expect((await request(url).get('/').set('x-client', 'bad')).status).toBe(403);
});

test('the memory driver (db: new Map()) is Floodgate without `redis`; id: (ctx) => ctx.ip is the default', async () => {
  const limiter = rateLimit({ prefix: uniquePrefix('koarl'), limits: { limit: 2, window: '1m' } });
  closers.push(limiter.close);
  const app = new Koa();
  app.use(limiter).use((ctx) => {
    ctx.body = 'Stuff!';
  });
  const url = await serve(app);
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await request(url).get('/')).status);
  expect(statuses).toEqual([200, 200, 429]);
  expect(limiter.limiter.algorithm).toBe('sliding-window');
});

test('throw: true -> a handler that throws: your error middleware gets status 429 with the headers set', async () => {
  const seen: { status: number; retryAfter: string }[] = [];
  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const status = (err as { status: number }).status;
      seen.push({ status, retryAfter: ctx.response.get('Retry-After') });
      ctx.status = status;
      ctx.body = { error: (err as Error).message };
    }
  });
  const limiter = rateLimit({
    redis,
    prefix: uniquePrefix('koarl'),
    limits: { limit: 1, window: '1m' },
    statusCode: 429, // status
    identify: (ctx, defaults) => (ctx.get('x-api-key') ? `key:${ctx.get('x-api-key')}` : defaults), // id: (ctx) => ...
    handler: (ctx, _next, decision) => ctx.throw(429, `Rate limit exceeded, retry in ${Math.ceil(decision.retryAfterMs / 1000)} seconds.`),
  });
  closers.push(limiter.close);
  app.use(limiter).use((ctx) => {
    ctx.body = 'Stuff!';
  });
  const url = await serve(app);
  expect((await request(url).get('/').set('x-api-key', 'k1')).status).toBe(200);
  const denied = await request(url).get('/').set('x-api-key', 'k1');
  expect(denied.status).toBe(429);
  expect(denied.body.error).toMatch(/^Rate limit exceeded, retry in \d+ seconds\.$/);
  expect(seen).toEqual([{ status: 429, retryAfter: expect.stringMatching(/^\d+$/) }]);
  // Another id has its own budget.
  expect((await request(url).get('/').set('x-api-key', 'k2')).status).toBe(200);
});

test("the guide's worked example: a global limit and a route limit that adds to it (@koa/router)", async () => {
  const prefix = uniquePrefix('koarl');
  const global = rateLimit({
    redis,
    prefix,
    limits: { limit: 100, window: '1m' },
    headers: 'legacy',
    message: 'Sometimes You Just Have to Slow Down.',
  });
  const search = rateLimit({ redis, prefix, name: 'search', limits: { limit: 3, window: '10s' } });
  closers.push(global.close, search.close);
  const app = new Koa({ proxy: true, maxIpsCount: 1 });
  const router = new Router();
  app.use(global);
  router.post('/search', search, (ctx) => {
    ctx.body = { remaining: ctx.state.rateLimit?.remaining };
  });
  app.use(router.routes()).use(router.allowedMethods());
  const url = await serve(app);
  const out = [];
  for (let i = 0; i < 4; i++) out.push(await request(url).post('/search'));
  expect(out.map((r) => r.status)).toEqual([200, 200, 200, 429]);
  // req.rateLimit is the tightest of the two: the route's 3.
  expect(out[0]!.body).toEqual({ remaining: 2 });
  // Both counted: 4 of the global 100 are gone (the denied one consumed nothing of the route's, but the
  // global limiter, which ran first, admitted and counted it).
  expect((await global.limiter.peek('ip:127.0.0.1')).remaining).toBe(96);
});
