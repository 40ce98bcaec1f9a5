import Koa, { type Context } from 'koa';
import Koa2 from 'koa2';
import request from 'supertest';
import { closeClients, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type RateLimitBaseOptions } from '@floodgate/koa';

/*
 * A `handler` that throws the denial (koa-ratelimit's `throw: true`, as docs/migrating/koa-ratelimit.md
 * rewrites it) under Koa's DEFAULT error handling: ctx.onerror removes every header of the response before
 * it answers, keeping only the error's own `headers`. The rate-limit headers and Retry-After must survive.
 */
const redis = connect();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
afterAll(closeClients);

const RATE_LIMIT_HEADERS = [
  'retry-after',
  'ratelimit',
  'ratelimit-policy',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];
const rateLimitHeadersOf = (res: request.Response): Record<string, string> =>
  Object.fromEntries(RATE_LIMIT_HEADERS.filter((h) => res.headers[h] !== undefined).map((h) => [h, res.headers[h] as string]));

describe.each([
  ['Koa 3', Koa],
  ['Koa 2', Koa2],
])('%s', (_, Framework) => {
  async function serve(...middleware: Koa.Middleware[]): Promise<string> {
    const app = new Framework();
    app.silent = true; // the thrown 429s would be printed
    for (const m of middleware) app.use(m as never);
    app.use((ctx: Context) => {
      ctx.body = 'ok';
    });
    const served = await serveHttp(app.listen(0, '127.0.0.1'));
    closers.push(served.close);
    return served.url;
  }
  const limiter = (extra: RateLimitBaseOptions) => {
    const made = rateLimit({ redis, prefix: uniquePrefix('koath'), limits: { limit: 1, window: '1m' }, ...extra } as never);
    closers.push(made.close);
    return made;
  };

  test.each([
    ['ctx.throw(429, message)', (ctx: Context) => ctx.throw(429, 'Rate limit exceeded.')],
    [
      'an async handler rejecting',
      async (ctx: Context) => {
        await new Promise((r) => setImmediate(r));
        ctx.throw(429, 'Rate limit exceeded.');
      },
    ],
  ])('handler %s: the 429 keeps every rate-limit header and Retry-After', async (_name, handler) => {
    const url = await serve(limiter({ headers: ['draft-8', 'legacy'], handler }));
    const allowed = await request(url).get('/');
    expect(allowed.status).toBe(200);
    const denied = await request(url).get('/');
    expect(denied.status).toBe(429);
    expect(denied.text).toBe('Rate limit exceeded.');
    expect(rateLimitHeadersOf(denied)).toEqual({
      'retry-after': expect.stringMatching(/^\d+$/),
      'ratelimit-policy': '"1m";q=1;w=60',
      ratelimit: expect.stringMatching(/^"1m";r=0;t=\d+$/),
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': expect.stringMatching(/^\d{10}$/),
    });
  });

  test("the headers of every limiter that ran survive, and the error's own headers win", async () => {
    const global = limiter({ name: 'api', limits: { limit: 10, window: '1m' } } as RateLimitBaseOptions);
    const route = limiter({
      name: 'route',
      handler: (ctx) => ctx.throw(429, 'slow down', { headers: { 'Retry-After': '3600', 'X-Reason': 'quota' } }),
    });
    const url = await serve(global, route);
    await request(url).get('/');
    const denied = await request(url).get('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['ratelimit-policy']).toBe('"api-1m";q=10;w=60, "route-1m";q=1;w=60');
    expect(denied.headers['ratelimit']).toMatch(/^"api-1m";r=8;t=\d+, "route-1m";r=0;t=\d+$/);
    expect(denied.headers['retry-after']).toBe('3600');
    expect(denied.headers['x-reason']).toBe('quota');
  });
});
