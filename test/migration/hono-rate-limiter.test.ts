import type { Server } from 'node:http';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { createAdaptorServer } from '@hono/node-server';
import request from 'supertest';
import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type RateLimitOptions } from '@floodgate/hono';

/*
 * docs/migrating/hono-rate-limiter.md, checked: hono-rate-limiter 0.5's README example as the guide rewrites
 * it, and every row of its options table, against real Hono apps on @hono/node-server (over sockets) and
 * the test Redis, asserting what hono-rate-limiter documents (and what the guide says differs).
 */
const redis = connect();
const closed = closeAfterEach();

/** A middleware closed after the test: Redis and a prefix of its own unless the options say otherwise. */
const limiterOf = (options: Partial<RateLimitOptions>) =>
  closed(rateLimit({ redis, prefix: uniquePrefix('honorl'), limits: { limit: 1, window: '1m' }, ...options } as RateLimitOptions));

/** An app of `middleware`, then `GET /` answering 'ok' (or the x-status header's status); its URL. */
async function appOf(...middleware: MiddlewareHandler[]): Promise<string> {
  const app = new Hono();
  for (const m of middleware) app.use(m);
  app.get('/', (c) => c.text('ok', Number(c.req.header('x-status') ?? 200) as 200));
  return serve(app);
}
async function serve(app: Hono): Promise<string> {
  return closed(await serveHttp((createAdaptorServer({ fetch: app.fetch }) as Server).listen(0, '127.0.0.1'))).url;
}
const statuses = async (url: string, n: number, set: Record<string, string> = {}): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(url).get('/').set(set)).status);
  return out;
};

test('the README example: 100 per 15 minutes, draft-6 headers, the client from the connection or a trusted proxy', async () => {
  const url = await appOf(
    limiterOf({
      limits: { limit: 100, window: '15m' }, // limit: 100, windowMs: 15 * 60 * 1000
      headers: 'draft-6', // standardHeaders: 'draft-6'
      trustProxy: 'loopback', // keyGenerator reading X-Forwarded-For -> the proxy on this host is trusted
    }),
  );
  const first = await request(url).get('/').set('X-Forwarded-For', '203.0.113.1');
  expect(first.headers).toMatchObject({ 'ratelimit-policy': '100;w=900', 'ratelimit-limit': '100', 'ratelimit-remaining': '99' });
  expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
  for (let i = 0; i < 99; i++) expect((await request(url).get('/').set('X-Forwarded-For', '203.0.113.1')).status).toBe(200);
  const denied = await request(url).get('/').set('X-Forwarded-For', '203.0.113.1');
  expect(denied.status).toBe(429);
  expect(denied.headers['ratelimit-remaining']).toBe('0');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(840);
  // Floodgate answers JSON; hono-rate-limiter sent its string message as text/plain.
  expect(denied.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: expect.stringContaining('Rate limit exceeded') });
  // Another client behind the trusted proxy has its own budget.
  expect((await request(url).get('/').set('X-Forwarded-For', '203.0.113.2')).status).toBe(200);
});

test("the keyGenerator most copy, reading X-Forwarded-For, gave a new budget per forged value; Floodgate's default does not", async () => {
  const url = await appOf(limiterOf({ limits: { limit: 2, window: '15m' }, logger: { warn: () => undefined } }));
  const forged = [];
  for (const ip of ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'])
    forged.push((await request(url).get('/').set('X-Forwarded-For', ip)).status);
  expect(forged).toEqual([200, 200, 429, 429]);
});

test('keyGenerator -> identify: by API key, and by address when there is none', async () => {
  const url = await appOf(
    limiterOf({
      limits: { limit: 2, window: '15m' },
      identify: (c, defaults) => {
        const key = c.req.header('x-api-key');
        return key ? `key:${key}` : defaults;
      },
    }),
  );
  expect(await statuses(url, 3, { 'x-api-key': 'k1' })).toEqual([200, 200, 429]);
  expect(await statuses(url, 2, { 'x-api-key': 'k2' })).toEqual([200, 200]);
  expect(await statuses(url, 3)).toEqual([200, 200, 429]);
});

test('limit: (c) => number -> plans chosen per request', async () => {
  const url = await appOf(
    limiterOf({
      limits: { free: { limit: 1, window: '1m' }, pro: { limit: 3, window: '1m' } },
      plan: (c) => (c.req.header('x-plan') === 'pro' ? 'pro' : 'free'),
      identify: (c) => `key:${c.req.header('x-api-key')}`,
    }),
  );
  expect(await statuses(url, 2, { 'x-api-key': 'a' })).toEqual([200, 429]);
  const pro = await request(url).get('/').set({ 'x-api-key': 'b', 'x-plan': 'pro' });
  expect(pro.headers['ratelimit-policy']).toBe('"1m";q=3;w=60');
  expect(await statuses(url, 3, { 'x-api-key': 'b', 'x-plan': 'pro' })).toEqual([200, 200, 429]);
});

test('store: MemoryStore -> no redis; the window a fixed one with algorithm: fixed-window', async () => {
  const memory = limiterOf({ redis: undefined, limits: { limit: 2, window: '1m' } });
  expect(await statuses(await appOf(memory), 3)).toEqual([200, 200, 429]);
  expect(memory.limiter.algorithm).toBe('sliding-window');
  const fixed = limiterOf({ limits: { limit: 2, window: '1m' }, algorithm: 'fixed-window' });
  expect(await statuses(await appOf(fixed), 3)).toEqual([200, 200, 429]);
  expect(fixed.limiter.algorithm).toBe('fixed-window');
});

test('denials count nothing: a client that keeps knocking has used only its limit', async () => {
  const limiter = limiterOf({ limits: { limit: 2, window: '1m' } });
  const url = await appOf(limiter);
  expect(await statuses(url, 6)).toEqual([200, 200, 429, 429, 429, 429]);
  expect((await limiter.limiter.peek('ip:127.0.0.1')).remaining).toBe(0);
  await limiter.limiter.reset('ip:127.0.0.1');
  expect(await statuses(url, 1)).toEqual([200]);
});

test("standardHeaders: 'draft-7' -> headers: 'draft-7'; false -> headers: false, with Retry-After still on a denial", async () => {
  const draft7 = await request(await appOf(limiterOf({ limits: { limit: 5, window: '1m' }, headers: 'draft-7' }))).get('/');
  expect(draft7.headers['ratelimit-policy']).toBe('5;w=60');
  expect(draft7.headers.ratelimit).toMatch(/^limit=5, remaining=4, reset=\d+$/);
  // No rate-limit header at all, but Retry-After on a denial, unless omitHeaders names it too.
  for (const [omitHeaders, retryAfter] of [
    [[], true],
    [['Retry-After'], false],
  ] as const) {
    const url = await appOf(limiterOf({ headers: false, omitHeaders }));
    const [allowed, denied] = [await request(url).get('/'), await request(url).get('/')];
    expect(Object.keys(allowed.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
    expect([denied.status, Number(denied.headers['retry-after']) >= 1]).toEqual([429, retryAfter]);
  }
});

test('message (string, object, function) and statusCode', async () => {
  const text = await appOf(limiterOf({ message: 'Too many requests, please try again later.', statusCode: 503 }));
  await request(text).get('/');
  const denied = await request(text).get('/');
  expect([denied.status, denied.body]).toEqual([
    503,
    { statusCode: 503, error: 'Service Unavailable', message: 'Too many requests, please try again later.' },
  ]);
  const object = await appOf(limiterOf({ message: { error: 'slow down' } }));
  await request(object).get('/');
  expect((await request(object).get('/')).body).toEqual({ error: 'slow down' });
  const fn = await appOf(limiterOf({ message: async (c: Context, decision) => `${c.req.path}: ${decision.limit} a minute` }));
  await request(fn).get('/');
  expect((await request(fn).get('/')).body.message).toBe('/: 1 a minute');
});

test('handler: a text body (as hono-rate-limiter sent), or next() to let the request through', async () => {
  const text = await appOf(limiterOf({ handler: (c) => c.text('Too many requests', 429) }));
  await request(text).get('/');
  const denied = await request(text).get('/');
  expect([denied.status, denied.headers['content-type'], denied.text, Number(denied.headers['retry-after']) >= 1]).toEqual([
    429,
    'text/plain; charset=UTF-8',
    'Too many requests',
    true,
  ]);
  const soft = await appOf(limiterOf({ handler: (_c, next) => next() }));
  expect(await statuses(soft, 3)).toEqual([200, 200, 200]);
});

test('skip -> skip; and allow lists', async () => {
  const skipped = await appOf(limiterOf({ skip: (c) => c.req.header('x-internal') === '1' }));
  expect(await statuses(skipped, 3, { 'x-internal': '1' })).toEqual([200, 200, 200]);
  expect(await statuses(skipped, 2)).toEqual([200, 429]);
  const allowed = await appOf(limiterOf({ allow: ['127.0.0.0/8'] }));
  expect(await statuses(allowed, 3)).toEqual([200, 200, 200]);
});

test("requestPropertyName -> c.get('rateLimit') (used and resetTime from it); requestStorePropertyName -> the middleware's limiter", async () => {
  const limiter = limiterOf({ limits: { limit: 5, window: '1m' } });
  const app = new Hono();
  app.use(limiter);
  app.get('/', (c) => {
    const info = c.get('rateLimit')!;
    return c.json({
      limit: info.limit,
      used: info.limit - info.remaining,
      remaining: info.remaining,
      resetTime: Date.now() + info.resetMs,
    });
  });
  const url = await serve(app);
  const body = (await request(url).get('/')).body as { limit: number; used: number; remaining: number; resetTime: number };
  expect(body).toMatchObject({ limit: 5, used: 1, remaining: 4 });
  expect(body.resetTime).toBeGreaterThan(Date.now());
  // rateLimitStore.getKey / resetKey
  expect((await limiter.limiter.peek('ip:127.0.0.1')).remaining).toBe(4);
  await limiter.limiter.reset('ip:127.0.0.1');
  expect((await limiter.limiter.peek('ip:127.0.0.1')).remaining).toBe(5);
});

test('skipFailedRequests, skipSuccessfulRequests and requestWasSuccessful keep their names', async () => {
  /** statuses(), each request's refund (if any) in the store before the next is sent. */
  const judgedOneByOne = async (url: string, n: number, set: Record<string, string> = {}): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      out.push((await request(url).get('/').set(set)).status);
      await settled();
    }
    return out;
  };
  const failed = limiterOf({ limits: { limit: 2, window: '1m' }, skipFailedRequests: true });
  const url = await appOf(failed);
  expect(await judgedOneByOne(url, 3, { 'x-status': '500' })).toEqual([500, 500, 500]);
  expect((await failed.limiter.peek('ip:127.0.0.1')).remaining).toBe(2);
  expect(await judgedOneByOne(url, 3)).toEqual([200, 200, 429]);
  const judged = limiterOf({
    limits: { limit: 2, window: '1m' },
    skipSuccessfulRequests: true,
    requestWasSuccessful: (c) => c.res.status < 300,
  });
  const judgedUrl = await appOf(judged);
  expect(await judgedOneByOne(judgedUrl, 3)).toEqual([200, 200, 200]);
  expect(await judgedOneByOne(judgedUrl, 3, { 'x-status': '302' })).toEqual([302, 302, 429]);
});

test("a route's own limit adds to the app-wide one, and c.get('rateLimit') is the tightest", async () => {
  const prefix = uniquePrefix('honorl');
  const app = new Hono();
  app.use(limiterOf({ prefix, limits: { limit: 100, window: '15m' } }));
  app.get('/search', limiterOf({ prefix, name: 'search', limits: { limit: 3, window: '10s' } }), (c) =>
    c.json({ remaining: c.get('rateLimit')?.remaining }),
  );
  const url = await serve(app);
  const out = [];
  for (let i = 0; i < 4; i++) out.push(await request(url).get('/search'));
  expect(out.map((r) => r.status)).toEqual([200, 200, 200, 429]);
  expect(out[0]!.body).toEqual({ remaining: 2 });
});
