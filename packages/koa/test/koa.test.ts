import Koa from 'koa';
import Koa2 from 'koa2';
import Router from '@koa/router';
import request from 'supertest';
import { type Decision, type Logger } from '@floodgate/core';
import { resetWarnings } from '@floodgate/core/adapter';
import { closeClients, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type RateLimitBaseOptions, type RateLimitOptions } from '@floodgate/koa';

const redis = connect();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
afterAll(closeClients);

const base = (extra: RateLimitBaseOptions = {}): RateLimitOptions =>
  ({
    redis,
    prefix: uniquePrefix('koa'),
    limits: { limit: 2, window: '1m' },
    ...extra,
  }) as RateLimitOptions;

async function serve(app: Koa): Promise<string> {
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closers.push(served.close);
  return served.url;
}

test('a bad handler option is a ConfigError naming it', () => {
  expect(() => rateLimit(base({ handler: 'nope' as unknown as RateLimitOptions['handler'] }))).toThrow(
    expect.objectContaining({ option: 'handler' }),
  );
});

// Every case that runs an app runs on Koa 3 and Koa 2.
describe.each([
  ['Koa 3', Koa],
  ['Koa 2', Koa2],
] as const)('%s', (name, framework) => {
  test('a @koa/router route limit adds to the global one; ctx.state.rateLimit carries the tightest decision', async () => {
    const app = new framework();
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
    const app = new framework();
    app.use(
      rateLimit(
        base({
          limits: { limit: 1, window: '1m' },
          handler: (ctx, _next, decision) => {
            seen.push(decision);
            ctx.status = 418;
            ctx.body = 'teapot';
          },
        }),
      ),
    );
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

  test('statusCode 503 is a denial like any other: the custom handler still answers it (decided by reason)', async () => {
    const app = new framework();
    app.use(
      rateLimit(
        base({
          limits: { limit: 1, window: '1m' },
          statusCode: 503,
          handler: (ctx, _next, decision) => {
            ctx.status = 599;
            ctx.body = { reason: decision.reason };
          },
        }),
      ),
    );
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const url = await serve(app);
    await request(url).get('/');
    // Before: status 503 made the adapter skip the handler, as if the store were unavailable.
    const denied = await request(url).get('/');
    expect([denied.status, denied.body]).toEqual([599, { reason: 'limit' }]);
  });

  test('a configured message object is a fresh body per denial: a later edit never reaches the next client', async () => {
    const app = new framework();
    // An upstream middleware that edits the body on the way out (an envelope, a request id...).
    app.use(async (ctx, next) => {
      await next();
      if (ctx.status === 429) (ctx.body as { seen?: number }).seen = ((ctx.body as { seen?: number }).seen ?? 0) + 1;
    });
    app.use(rateLimit(base({ limits: { limit: 1, window: '1m' }, message: { error: 'slow down' } })));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const url = await serve(app);
    await request(url).get('/');
    // Before: one shared object, so the second denial carried the first one's edit ({ seen: 2 }).
    expect((await request(url).get('/')).body).toEqual({ error: 'slow down', seen: 1 });
    expect((await request(url).get('/')).body).toEqual({ error: 'slow down', seen: 1 });
  });

  test('the default denial is a JSON object body, typed as Koa types one (a type set upstream as Koa keeps it)', async () => {
    const app = new framework();
    // Upstream middleware sees the denial's body as the object it is (an envelope, a request id...).
    app.use(async (ctx, next) => {
      if (ctx.path === '/problem') ctx.type = 'application/problem+json';
      await next();
      if (ctx.status === 429) ctx.set('X-Denied-Code', String((ctx.body as { statusCode?: number }).statusCode));
    });
    app.use(rateLimit(base({ limits: { limit: 1, window: '1m' } })));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const url = await serve(app);
    expect((await request(url).get('/')).status).toBe(200);
    // The first denial comes from Redis, the next from the block cache.
    for (const path of ['/', '/', '/problem']) {
      const denied = await request(url).get(path);
      expect(denied.status).toBe(429);
      // Koa 3 keeps a type set before an object body; Koa 2 always types an object body 'json'.
      const kept = path === '/problem' && name === 'Koa 3';
      expect(denied.headers['content-type']).toBe(kept ? 'application/problem+json' : 'application/json; charset=utf-8');
      expect(denied.headers['x-denied-code']).toBe('429');
      expect(JSON.parse(denied.text)).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
      expect(Number(denied.headers['content-length'])).toBe(Buffer.byteLength(denied.text));
    }
  });

  test('app.proxy with no maxIpsCount is warned about once when X-Forwarded-For has several entries', async () => {
    resetWarnings();
    const warnings: string[] = [];
    const logger: Logger = { warn: (m) => warnings.push(m) };
    const app = new framework({ proxy: true });
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
    const app = new framework({ proxy: true, maxIpsCount: 1 });
    // A 10 s deadline: a loaded machine's check past the default one would warn of the failure policy.
    app.use(rateLimit(base({ logger: { warn: (m) => warnings.push(m) }, timeoutMs: 10_000 })));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const url = await serve(app);
    const from = (spoof: string) => request(url).get('/').set('X-Forwarded-For', `${spoof}, 10.0.0.1`);
    expect([(await from('1.1.1.1')).status, (await from('2.2.2.2')).status, (await from('3.3.3.3')).status]).toEqual([200, 200, 429]);
    expect(warnings).toEqual([]);
  });

  test('errors from identify() propagate to Koa (500), not a silent pass', async () => {
    const app = new framework();
    app.silent = true;
    app.use(
      rateLimit(
        base({
          identify: () => {
            throw new Error('boom');
          },
        }),
      ),
    );
    app.use((ctx) => {
      ctx.body = 'reached';
    });
    const url = await serve(app);
    const res = await request(url).get('/');
    expect(res.status).toBe(500);
    expect(res.text).not.toBe('reached');
  });

  test.each([
    ['throws', 'redis'],
    ['throws', 'cache'],
    ['returns a rejected promise', 'redis'],
    ['returns a rejected promise', 'cache'],
  ] as const)('a handler that %s for a denial from %s: Koa answers 500 and emits the error', async (how, source) => {
    const app = new framework();
    const caught: string[] = [];
    app.on('error', (err: Error) => caught.push(err.message));
    app.use(
      rateLimit(
        base({
          limits: { limit: 1, window: '1m' },
          handler: (ctx, _next, decision) => {
            if (decision.source !== source) return void (ctx.status = 429);
            if (how === 'throws') throw new Error('boom');
            return Promise.reject(new Error('boom'));
          },
        }),
      ),
    );
    app.use((ctx) => {
      ctx.body = 'reached';
    });
    const url = await serve(app);
    expect((await request(url).get('/')).text).toBe('reached');
    const statuses = [(await request(url).get('/').timeout(2000)).status, (await request(url).get('/').timeout(2000)).status];
    expect(statuses).toEqual(source === 'redis' ? [500, 429] : [429, 500]);
    expect(caught).toEqual(['boom']);
  });
});
