import Koa, { type Context, type Next } from 'koa';
import Router from '@koa/router';
import request from 'supertest';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type RateLimitOptions } from '@floodgate/koa';

/*
 * docs/migrating/koa-ratelimit.md, checked: koa-ratelimit's README examples (the Redis driver, the memory
 * driver, `throw`) as the guide rewrites them, and every row of its options table, against real Koa apps
 * (over sockets) and the test Redis, asserting the responses koa-ratelimit documents (and what the guide
 * says differs).
 */
const redis = connect();
const closed = closeAfterEach();

async function serve(app: Koa): Promise<string> {
  app.silent = true; // errors some cases provoke on purpose (a thrown 429) would be printed
  return closed(await serveHttp(app.listen(0, '127.0.0.1'))).url;
}
/** A middleware closed after the test: Redis and a prefix of its own unless the options say otherwise. */
const limiterOf = (options: Partial<RateLimitOptions>) =>
  closed(rateLimit({ redis, prefix: uniquePrefix('koarl'), limits: { limit: 1, window: '1m' }, ...options } as RateLimitOptions));
/** An app of `middleware`, then a route answering 'Stuff!'; its URL. */
async function appOf(...middleware: Koa.Middleware[]): Promise<string> {
  const app = new Koa();
  for (const m of middleware) app.use(m);
  app.use((ctx) => {
    ctx.body = 'Stuff!';
  });
  return serve(app);
}
const statuses = async (url: string, n: number, set: Record<string, string> = {}): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(url).get('/').set(set)).status);
  return out;
};

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
  const limiter = limiterOf({
    // driver: 'redis', db: new Redis(); namespace -> prefix
    limits: { limit: 100, window: 60000 }, // max: 100, duration: 60000
    message: 'Sometimes You Just Have to Slow Down.', // errorMessage
    headers: 'legacy', // X-RateLimit-*; disableHeader: true -> headers: false
    skip: (ctx) => ctx.get('x-client') === 'internal', // whitelist
  });
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
  const limiter = limiterOf({ redis: undefined, limits: { limit: 2, window: '1m' } });
  const url = await appOf(limiter);
  expect(await statuses(url, 3)).toEqual([200, 200, 429]);
  expect(limiter.limiter.algorithm).toBe('sliding-window');
  // To clear it (db.clear() before): reset the identifiers on the middleware's limiter.
  await limiter.limiter.reset('ip:127.0.0.1');
  expect(await statuses(url, 1)).toEqual([200]);
});

/** throw: true -> a handler that throws (koa-ratelimit: ctx.throw(status, message, { headers })). */
const throwing = () =>
  limiterOf({
    statusCode: 429, // status
    identify: (ctx, defaults) => (ctx.get('x-api-key') ? `key:${ctx.get('x-api-key')}` : defaults), // id: (ctx) => ...
    handler: (ctx, _next, decision) => ctx.throw(429, `Rate limit exceeded, retry in ${Math.ceil(decision.retryAfterMs / 1000)} seconds.`),
  });

test('throw: true -> a handler that throws: your error middleware gets status 429 with the headers set', async () => {
  const seen: { status: number; retryAfter: string }[] = [];
  const url = await appOf(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const status = (err as { status: number }).status;
      seen.push({ status, retryAfter: ctx.response.get('Retry-After') });
      ctx.status = status;
      ctx.body = { error: (err as Error).message };
    }
  }, throwing());
  expect((await request(url).get('/').set('x-api-key', 'k1')).status).toBe(200);
  const denied = await request(url).get('/').set('x-api-key', 'k1');
  expect(denied.status).toBe(429);
  expect(denied.body.error).toMatch(/^Rate limit exceeded, retry in \d+ seconds\.$/);
  expect(seen).toEqual([{ status: 429, retryAfter: expect.stringMatching(/^\d+$/) }]);
  // Another id has its own budget.
  expect((await request(url).get('/').set('x-api-key', 'k2')).status).toBe(200);
});

test("throw: true under Koa's default error handling (no error middleware): the 429 keeps RateLimit-* and Retry-After", async () => {
  // Koa's ctx.onerror removes every header and sets only the error's own `headers`: the error carries them.
  const url = await appOf(throwing());
  await request(url).get('/');
  const denied = await request(url).get('/');
  expect(denied.status).toBe(429);
  expect(denied.text).toMatch(/^Rate limit exceeded, retry in \d+ seconds\.$/);
  expect(denied.headers).toMatchObject({
    'retry-after': expect.stringMatching(/^\d+$/),
    'ratelimit-policy': '"1m";q=1;w=60',
    ratelimit: expect.stringMatching(/^"1m";r=0;t=\d+$/),
  });
});

test("the guide's worked example: a global limit and a route limit that adds to it (@koa/router)", async () => {
  const prefix = uniquePrefix('koarl');
  const global = limiterOf({
    prefix,
    limits: { limit: 100, window: '1m' },
    headers: 'legacy',
    message: 'Sometimes You Just Have to Slow Down.',
  });
  const search = limiterOf({ prefix, name: 'search', limits: { limit: 3, window: '10s' } });
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

test('max and duration -> limits, several at once; status -> statusCode; errorMessage -> message (string, object, async function)', async () => {
  const several = await appOf(
    limiterOf({
      limits: [
        { limit: 2, window: '10s' },
        { limit: 100, window: '1h' },
      ],
      statusCode: 503,
    }),
  );
  expect(await statuses(several, 3)).toEqual([200, 200, 503]);
  const object = await appOf(limiterOf({ message: { error: 'Sometimes You Just Have to Slow Down.' } }));
  await request(object).get('/');
  expect((await request(object).get('/')).body).toEqual({ error: 'Sometimes You Just Have to Slow Down.' });
  const fn = await appOf(
    limiterOf({
      message: async (ctx, decision) => `${ctx.path}: ${decision.limit} a minute`,
    }),
  );
  await request(fn).get('/');
  expect((await request(fn).get('/')).body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: '/: 1 a minute' });
});

test('id: (ctx) => false (not limited) -> skip: (ctx) => true; whitelist -> allow: [...]; blacklist -> deny: [...] or block()', async () => {
  const skipped = await appOf(limiterOf({ skip: (ctx) => ctx.get('x-api-key') === '' }));
  expect(await statuses(skipped, 3)).toEqual([200, 200, 200]);
  expect(await statuses(skipped, 2, { 'x-api-key': 'k' })).toEqual([200, 429]);
  const allowed = await appOf(limiterOf({ allow: ['127.0.0.1'] }));
  expect(await statuses(allowed, 3)).toEqual([200, 200, 200]);
  // deny: a 403 before anything is counted (the blacklist's status), whatever the limit.
  const denied = limiterOf({ limits: { limit: 100, window: '1m' }, deny: ['127.0.0.0/8'] });
  const refused = await request(await appOf(denied)).get('/');
  expect([refused.status, refused.headers['ratelimit'], refused.headers['retry-after']]).toEqual([403, undefined, undefined]);
  // A blacklist with an end: block() on the middleware's limiter.
  const blocking = limiterOf({ limits: { limit: 100, window: '1m' } });
  const url = await appOf(blocking);
  await blocking.limiter.block('ip:127.0.0.1', { duration: '10m', reason: 'banned' });
  const blocked = await request(url).get('/');
  expect([blocked.status, Number(blocked.headers['retry-after'])]).toEqual([429, 600]);
});

test('disableHeader: true -> headers: false (Retry-After stays on a denial); omitHeaders removes it too', async () => {
  const none = await appOf(limiterOf({ headers: false }));
  const first = await request(none).get('/');
  expect(Object.keys(first.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
  const denied = await request(none).get('/');
  expect([denied.status, Number(denied.headers['retry-after']) >= 1]).toEqual([429, true]);
  const bare = await appOf(limiterOf({ headers: false, omitHeaders: ['Retry-After'] }));
  await request(bare).get('/');
  const silent = await request(bare).get('/');
  expect([silent.status, silent.headers['retry-after']]).toEqual([429, undefined]);
});

test("namespace -> prefix + name: keys start '<prefix>:<name>:'; 'limit:' is prefix 'limit'", () => {
  expect(() => rateLimit({ redis, prefix: 'limit:', limits: { limit: 1, window: '1m' } })).toThrow(
    expect.objectContaining({ option: 'prefix', message: expect.stringContaining("prefix 'limit' gives keys that start 'limit:'") }),
  );
  const limiter = limiterOf({ name: 'api' });
  expect(limiter.limiter.prefix).toMatch(/^koarl-/);
  expect(limiter.limiter.name).toBe('api');
});

test('a text body (koa-ratelimit sent text/plain) -> handler; IPv6 one key per address (its behaviour) -> ipv6Subnet: false', async () => {
  const text = await appOf(
    limiterOf({
      handler: (ctx) => {
        ctx.status = 429;
        ctx.body = 'Rate limit exceeded.';
      },
    }),
  );
  await request(text).get('/');
  const denied = await request(text).get('/');
  expect([denied.status, denied.headers['content-type'], denied.text, Number(denied.headers['retry-after']) >= 1]).toEqual([
    429,
    'text/plain; charset=utf-8',
    'Rate limit exceeded.',
    true,
  ]);
  const app = new Koa({ proxy: true, maxIpsCount: 1 });
  app.use(limiterOf({ ipv6Subnet: false })).use((ctx) => {
    ctx.body = 'ok';
  });
  const url = await serve(app);
  const from = async (ip: string): Promise<number> => (await request(url).get('/').set('X-Forwarded-For', ip)).status;
  // Two addresses of one /64: two keys without grouping (one budget with the default /56).
  expect([await from('2001:db8::1'), await from('2001:db8::2'), await from('2001:db8::1')]).toEqual([200, 200, 429]);
});
