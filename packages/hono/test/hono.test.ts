import { Hono, type Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import request from 'supertest';
import { createLimiter, type Decision } from '@floodgate/core';
import { closeAfterEach, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { concurrency, rateLimit, slowDown, type RateLimitBaseOptions, type RateLimitOptions, type SlowDownInfo } from '@floodgate/hono';
import { serveHono } from './serve';

const redis = connect();
const closing = closeAfterEach();

const base = (extra: RateLimitBaseOptions = {}): RateLimitOptions =>
  ({ redis, prefix: uniquePrefix('hono'), limits: { limit: 2, window: '1m' }, ...extra }) as RateLimitOptions;
const limit = (extra: RateLimitBaseOptions = {}) => closing(rateLimit(base(extra)));
const serve = async (app: Hono): Promise<string> => closing(await serveHono(app)).url;

test('a route limit adds to the app-wide one; c.get("rateLimit") is typed and carries the tightest decision', async () => {
  const prefix = uniquePrefix('hono');
  const app = new Hono();
  app.use(limit({ prefix, limits: { limit: 5, window: '1m' } }));
  const remaining = (c: Context) => {
    const decision: Decision | undefined = c.get('rateLimit');
    return c.json({ remaining: decision?.remaining });
  };
  app.get('/', remaining);
  app.get('/search', limit({ prefix, name: 'search', limits: { limit: 1, window: '1m' } }), remaining);
  const url = await serve(app);
  expect((await request(url).get('/')).body).toEqual({ remaining: 4 });
  const search = await request(url).get('/search');
  expect(search.body).toEqual({ remaining: 0 });
  expect(search.headers['ratelimit']).toMatch(/^"1m";r=3;t=\d+, "search-1m";r=0;t=\d+$/);
  const denied = await request(url).get('/search');
  expect([denied.status, denied.headers['content-type']]).toEqual([429, 'application/json; charset=utf-8']);
  expect((await request(url).get('/')).body).toEqual({ remaining: 1 });
});

test('a handler that returns a Response it made itself still carries every limiter’s headers', async () => {
  const prefix = uniquePrefix('hono');
  const app = new Hono();
  app.use(limit({ prefix, limits: { limit: 5, window: '1m' } }));
  app.get('/raw', limit({ prefix, name: 'raw', limits: { limit: 3, window: '1m' } }), () => new Response('raw', { status: 201 }));
  const url = await serve(app);
  const res = await request(url).get('/raw');
  expect([res.status, res.text]).toEqual([201, 'raw']);
  expect(res.headers['ratelimit']).toMatch(/^"1m";r=4;t=\d+, "raw-1m";r=2;t=\d+$/);
  expect(res.headers['ratelimit-policy']).toBe('"1m";q=5;w=60, "raw-1m";q=3;w=60');
});

test('handler replaces the denial, after Retry-After is set; it may return its own Response or let the request through', async () => {
  const seen: Decision[] = [];
  const app = new Hono();
  app.use(
    limit({
      limits: { limit: 1, window: '1m' },
      handler: (c, next, decision) => {
        seen.push(decision);
        if (c.req.header('x-soft') === '1') return next();
        return new Response('teapot', { status: 418 });
      },
    }),
  );
  app.get('/', (c) => c.text('ok'));
  const url = await serve(app);
  expect((await request(url).get('/')).text).toBe('ok');
  const denied = await request(url).get('/');
  expect([denied.status, denied.text]).toEqual([418, 'teapot']);
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(denied.headers['ratelimit']).toMatch(/^"1m";r=0;t=\d+$/);
  const soft = await request(url).get('/').set('x-soft', '1');
  expect([soft.status, soft.text]).toEqual([200, 'ok']);
  expect(soft.headers['retry-after']).toBeDefined();
  expect(seen.map((d) => [d.allowed, d.reason])).toEqual([
    [false, 'limit'],
    [false, 'limit'],
  ]);
  expect(() => rateLimit(base({ handler: 'nope' as never }))).toThrow(expect.objectContaining({ option: 'handler' }));
});

test('an option function that throws fails the request (500): it never reaches the handler', async () => {
  let reached = 0;
  const app = new Hono();
  app.onError((_err, c) => c.body('failed', 500));
  app.use(
    limit({
      identify: () => {
        throw new Error('boom');
      },
    }),
  );
  app.get('/', (c) => c.text(String(++reached)));
  const url = await serve(app);
  expect((await request(url).get('/')).status).toBe(500);
  expect(reached).toBe(0);
});

test('slowDown: c.get("slowDown") reports the count and the delay waited', async () => {
  const app = new Hono();
  app.use(closing(slowDown({ redis, prefix: uniquePrefix('hono'), limits: { limit: 5, window: '1m' }, delayAfter: 1, delayMs: 30 })));
  app.get('/', (c) => {
    const info: SlowDownInfo | undefined = c.get('slowDown');
    return c.json({ used: info?.used, delayMs: info?.delayMs });
  });
  const url = await serve(app);
  expect((await request(url).get('/')).body).toEqual({ used: 1, delayMs: 0 });
  expect((await request(url).get('/')).body).toEqual({ used: 2, delayMs: 30 });
});

test('a denial writes each of its headers once: rateLimit, slowDown (a blocked client) and concurrency', async () => {
  // Every c.header call of a request, by header name, counted by a middleware ahead of Floodgate's.
  let writes: string[] = [];
  const app = new Hono();
  app.use(async (c, next) => {
    const header = c.header.bind(c) as (...args: unknown[]) => void;
    c.header = ((...args: unknown[]) => {
      writes.push(String(args[0]).toLowerCase());
      return header(...args);
    }) as typeof c.header;
    await next();
  });
  app.get('/limit', limit({ limits: { limit: 1, window: '1m' } }), (c) => c.text('ok'));
  const slow = closing(slowDown({ redis, prefix: uniquePrefix('hono'), limits: { limit: 5, window: '1m' }, delayAfter: 5 }));
  await slow.limiter.block('ip:127.0.0.1', { duration: '1m' });
  app.get('/slow', slow, (c) => c.text('ok'));
  let entered: () => void = () => undefined;
  const inFlight = new Promise<void>((r) => (entered = r));
  let finish: () => void = () => undefined;
  const held = new Promise<Response>((r) => (finish = () => r(new Response('done'))));
  app.get('/one', concurrency({ redis, prefix: uniquePrefix('hono'), max: 1 }), () => {
    entered();
    return held;
  });
  const url = await serve(app);
  const denied = async (path: string): Promise<string[]> => {
    writes = [];
    const res = await request(url).get(path);
    expect([res.status, res.headers['content-type']]).toEqual([429, 'application/json; charset=utf-8']);
    expect(writes).toContain('retry-after');
    return writes;
  };
  expect((await request(url).get('/limit')).status).toBe(200);
  const limited = await denied('/limit');
  expect(limited).toEqual(expect.arrayContaining(['ratelimit', 'ratelimit-policy']));
  // Before: rateLimit's and slowDown's denials wrote their `set` headers twice (Retry-After; in draft-6, draft-7
  // and legacy modes the counts too).
  expect(limited).toEqual([...new Set(limited)]);
  const blocked = await denied('/slow');
  expect(blocked).toEqual([...new Set(blocked)]);
  const first = request(url).get('/one');
  const firstDone = first.then((r) => r.status);
  await inFlight;
  const busy = await denied('/one');
  expect(busy).toEqual([...new Set(busy)]);
  finish();
  expect(await firstDone).toBe(200);
});

describe('connection info', () => {
  test("@hono/node-server's getConnInfo, passed explicitly, counts the client as the default does", async () => {
    const app = new Hono();
    app.use(limit({ getConnInfo }));
    app.get('/', (c) => c.text(String(c.get('rateLimit')?.identifier)));
    const url = await serve(app);
    expect((await request(url).get('/')).text).toBe('ip:127.0.0.1');
    expect((await request(url).get('/')).status).toBe(200);
    expect((await request(url).get('/')).status).toBe(429);
  });

  /*
   * app.request() hands Hono a Web standard Request with no server behind it: no Node connection, as on
   * Bun, Deno or Workers. With the runtime's getConnInfo, every middleware works; without it, the request
   * fails rather than go unlimited or share one budget with every client.
   */
  test('with no Node server behind the request, getConnInfo gives the address, and leaving it out fails the request', async () => {
    const address = { value: '198.51.100.1' };
    const connInfo = () => ({ remote: { address: address.value } });
    const app = new Hono();
    app.use(concurrency({ redis, prefix: uniquePrefix('hono'), max: 1, getConnInfo: connInfo }));
    app.use(limit({ getConnInfo: connInfo }));
    app.get('/', (c) => c.text(String(c.get('rateLimit')?.identifier)));
    expect(await (await app.request('/')).text()).toBe('ip:198.51.100.1');
    expect((await app.request('/')).status).toBe(200);
    expect((await app.request('/')).status).toBe(429);
    address.value = '198.51.100.2';
    expect((await app.request('/')).status).toBe(200);

    const bare = new Hono();
    bare.onError((err, c) => c.body(err.message, 500));
    bare.use(limit());
    bare.get('/', (c) => c.text('reached'));
    const failed = await bare.request('/');
    expect(failed.status).toBe(500);
    expect(await failed.text()).toMatch(/pass getConnInfo/);
  });
});

describe('close()', () => {
  test('frees the name of the limiter the middleware created, so it can be built again with other rules', async () => {
    const prefix = uniquePrefix('honoclose');
    const first = rateLimit({ redis, prefix, name: 'api', limits: { limit: 5, window: '1m' } });
    expect(() => rateLimit({ redis, prefix, name: 'api', limits: { limit: 9, window: '1m' } })).toThrow(/already used/);
    await first.close();
    const second = closing(rateLimit({ redis, prefix, name: 'api', limits: { limit: 9, window: '1m' } }));
    expect(second.limiter.rules.map((r) => r.limit)).toEqual([9]);
  });

  test('a ConfigError of an option of this adapter leaves the name free: the corrected middleware builds', () => {
    const prefix = uniquePrefix('honoclose');
    const options = { redis, prefix, name: 'api', limits: { limit: 5, window: '1m' } };
    expect(() => rateLimit({ ...options, trustProxy: ['proxy.internal'] })).toThrow(expect.objectContaining({ option: 'trustProxy[0]' }));
    expect(() => rateLimit({ ...options, handler: 'nope' as never })).toThrow(expect.objectContaining({ option: 'handler' }));
    expect(() => slowDown({ ...options, getConnInfo: 'node' as never })).toThrow(expect.objectContaining({ option: 'getConnInfo' }));
    // Other rules under the same name: "already used" if a failed construction had kept the name.
    const corrected = closing(rateLimit({ ...options, limits: { limit: 9, window: '1m' }, trustProxy: ['10.0.0.0/8'] }));
    expect(corrected.limiter.rules.map((r) => r.limit)).toEqual([9]);
  });

  test('leaves a shared limiter open', async () => {
    const prefix = uniquePrefix('honoclose');
    const shared = closing(createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'shared', limits: { limit: 5, window: '1m' } }));
    const middleware = rateLimit({ limiter: shared });
    expect(middleware.limiter).toBe(shared);
    await middleware.close();
    expect(() => createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'shared', limits: { limit: 6, window: '1m' } })).toThrow(
      /already used/,
    );
  });
});
