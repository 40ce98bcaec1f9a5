import Koa from 'koa';
import Router from '@koa/router';
import request from 'supertest';
import { resetWarnings, type Decision, type Logger } from '@floodgate/core';
import { closeClients, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type RateLimitOptions } from '@floodgate/koa';

const redis = connect();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
afterAll(closeClients);

const base = (extra: Partial<RateLimitOptions> = {}): RateLimitOptions => ({ redis, prefix: uniquePrefix('koa'), limits: { limit: 2, window: '1m' }, ...extra });

async function serve(app: Koa): Promise<string> {
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closers.push(served.close);
  return served.url;
}

test('a @koa/router route limit adds to the global one; ctx.state.rateLimit carries the tightest decision', async () => {
  const app = new Koa();
  const router = new Router();
  const prefix = uniquePrefix('koa');
  app.use(rateLimit({ redis, prefix, limits: { limit: 5, window: '1m' } }));
  router.get('/', (ctx) => {
    ctx.body = { remaining: ctx.state.rateLimit?.remaining };
  });
  router.get('/search', rateLimit({ redis, prefix, name: 'search', limits: { limit: 1, window: '1m' } }), (ctx) => {
    ctx.body = { remaining: ctx.state.rateLimit?.remaining };
  });
  app.use(router.routes());
  const url = await serve(app);
  expect((await request(url).get('/')).body).toEqual({ remaining: 4 });
  const search = await request(url).get('/search');
  // Global: 3 left; search: 0 left, so the search decision is the tightest.
  expect(search.body).toEqual({ remaining: 0 });
  expect(search.headers['ratelimit']).toMatch(/^"1m";r=3;t=\d+, "search-1m";r=0;t=\d+$/);
  expect((await request(url).get('/search')).status).toBe(429);
  // The global limiter ran (and counted) before the search limiter denied: as in Express.
  expect((await request(url).get('/')).body).toEqual({ remaining: 1 });
});

test('handler replaces the denial response, after Retry-After is set', async () => {
  const seen: Decision[] = [];
  const app = new Koa();
  app.use(rateLimit(base({
    limits: { limit: 1, window: '1m' },
    handler: (ctx, _next, decision) => {
      seen.push(decision);
      ctx.status = 418;
      ctx.body = 'teapot';
    },
  })));
  app.use((ctx) => {
    ctx.body = 'ok';
  });
  const url = await serve(app);
  expect((await request(url).get('/')).text).toBe('ok');
  const denied = await request(url).get('/');
  expect(denied.status).toBe(418);
  expect(denied.text).toBe('teapot');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(seen.map((d) => [d.allowed, d.reason])).toEqual([[false, 'limit']]);
});

test('app.proxy with no maxIpsCount is warned about once when X-Forwarded-For has several entries', async () => {
  resetWarnings();
  const warnings: string[] = [];
  const logger: Logger = { warn: (m) => warnings.push(m) };
  const app = new Koa({ proxy: true });
  app.use(rateLimit(base({ logger })));
  app.use((ctx) => {
    ctx.body = { ip: ctx.ip };
  });
  const url = await serve(app);
  expect((await request(url).get('/').set('X-Forwarded-For', '9.9.9.9')).status).toBe(200);
  expect(warnings).toEqual([]);
  // The leftmost entry, which the client wrote, became ctx.ip: the warned-about hole.
  expect((await request(url).get('/').set('X-Forwarded-For', '6.6.6.6, 10.0.0.1')).body).toEqual({ ip: '6.6.6.6' });
  await request(url).get('/').set('X-Forwarded-For', '7.7.7.7, 10.0.0.1');
  expect(warnings.filter((w) => w.includes('[trust-proxy-all]') && w.includes('maxIpsCount'))).toHaveLength(1);
});

test('with maxIpsCount set, only the proxy-written entry counts and nothing is warned', async () => {
  resetWarnings();
  const warnings: string[] = [];
  const app = new Koa({ proxy: true, maxIpsCount: 1 });
  app.use(rateLimit(base({ logger: { warn: (m) => warnings.push(m) } })));
  app.use((ctx) => {
    ctx.body = 'ok';
  });
  const url = await serve(app);
  const from = (spoof: string) => request(url).get('/').set('X-Forwarded-For', `${spoof}, 10.0.0.1`);
  expect([(await from('1.1.1.1')).status, (await from('2.2.2.2')).status, (await from('3.3.3.3')).status]).toEqual([200, 200, 429]);
  expect(warnings).toEqual([]);
});

test('errors from identify() propagate to Koa (500), not a silent pass', async () => {
  const app = new Koa();
  app.silent = true;
  app.use(rateLimit(base({ identify: () => { throw new Error('boom'); } })));
  app.use((ctx) => {
    ctx.body = 'reached';
  });
  const url = await serve(app);
  const res = await request(url).get('/');
  expect(res.status).toBe(500);
  expect(res.text).not.toBe('reached');
});

test('a bad handler option is a ConfigError naming it', () => {
  expect(() => rateLimit(base({ handler: 'nope' as unknown as RateLimitOptions['handler'] }))).toThrow(expect.objectContaining({ option: 'handler' }));
});
