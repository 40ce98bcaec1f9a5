import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import express4 from 'express4';
import request from 'supertest';
import { createLimiter, type Decision } from '@floodgate/core';
import { resetWarnings } from '@floodgate/core/adapter';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { rateLimit, type RateLimitOptions } from '@floodgate/express';

const redis = connect();
const servers: ReturnType<express.Express['listen']>[] = [];
afterEach(() =>
  servers.splice(0).forEach((s) => {
    s.closeAllConnections();
    s.close();
  }),
);
afterAll(closeClients);

async function serve(app: express.Express): Promise<string> {
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('options used by peers are explained; bad handler is a ConfigError', () => {
  expect(() => rateLimit({ limits: { limit: 1, window: '1s' }, keyGenerator: () => 'x' } as never)).toThrow(
    /keyGenerator.*identify\(req, defaults\)/,
  );
  expect(() => rateLimit({ limits: { limit: 1, window: '1s' }, max: 5 } as never)).toThrow(/`max` is not a Floodgate option/);
  expect(() => rateLimit({ limits: { limit: 1, window: '1s' }, handler: 'x' as never })).toThrow(
    expect.objectContaining({ option: 'handler' }),
  );
});

// Express 4 ignores the promise a middleware returns and Express 5 handles it: every case that runs an app runs on both.
describe.each([
  ['Express 5', express],
  ['Express 4', express4],
] as const)('%s', (_name, framework) => {
  function appWith(...mw: RequestHandler[]): express.Express {
    const app = framework();
    app.get('/', ...mw, (req, res) => {
      res.json({ remaining: req.rateLimit?.remaining ?? null });
    });
    return app;
  }

  test('req.rateLimit carries the decision to handlers', async () => {
    const url = await serve(appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 5, window: '1m' } })));
    expect((await request(url).get('/')).body).toEqual({ remaining: 4 });
    expect((await request(url).get('/')).body).toEqual({ remaining: 3 });
  });

  test("a denial is JSON with its length and no ETag, HEAD gets no body, and an object message follows the app's json settings", async () => {
    const url = await serve(appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 1, window: '1m' } })));
    await request(url).get('/').expect(200);
    const denied = await request(url).get('/').expect(429);
    expect(denied.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(denied.headers['content-length']).toBe(String(Buffer.byteLength(denied.text)));
    expect(denied.headers.etag).toBeUndefined();
    expect(denied.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: expect.stringMatching(/^Rate limit exceeded/) });
    const head = await request(url).head('/').expect(429);
    expect(head.headers['content-length']).toBe(denied.headers['content-length']);
    expect(head.headers['retry-after']).toBeDefined();
    expect(head.text ?? '').toBe('');

    const app = appWith(
      rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 1, window: '1m' }, message: { error: 'slow down' } }),
    );
    app.set('json spaces', 2);
    const spaced = await serve(app);
    await request(spaced).get('/').expect(200);
    expect((await request(spaced).get('/').expect(429)).text).toBe('{\n  "error": "slow down"\n}');
  });

  test('handler replaces the denial response, after Retry-After is set', async () => {
    const seen: Decision[] = [];
    const limit = rateLimit({
      redis,
      prefix: uniquePrefix('ex'),
      limits: { limit: 1, window: '1m' },
      handler: (_req, res, _next, decision) => {
        seen.push(decision);
        res.status(418).send('teapot');
      },
    });
    const url = await serve(appWith(limit));
    await request(url).get('/');
    const denied = await request(url).get('/');
    expect(denied.status).toBe(418);
    expect(denied.text).toBe('teapot');
    expect(denied.headers['retry-after']).toMatch(/^\d+$/);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ allowed: false, reason: 'limit' });
  });

  test('statusCode 503 is a denial like any other: the custom handler still answers it (decided by reason)', async () => {
    const limit = rateLimit({
      redis,
      prefix: uniquePrefix('ex'),
      limits: { limit: 1, window: '1m' },
      statusCode: 503,
      handler: (_req, res, _next, decision) => void res.status(599).json({ reason: decision.reason }),
    });
    const url = await serve(appWith(limit));
    await request(url).get('/');
    // Before: status 503 made the adapter skip the handler, as if the store were unavailable.
    const denied = await request(url).get('/');
    expect([denied.status, denied.body]).toEqual([599, { reason: 'limit' }]);
  });

  test('limiter: a shared limiter counts across middlewares, and core options beside it are an error', async () => {
    const limiter = createLimiter({ ...TEST_DEADLINE, redis, prefix: uniquePrefix('ex'), limits: { limit: 2, window: '1m' } });
    const a = await serve(appWith(rateLimit({ limiter })));
    const b = await serve(appWith(rateLimit({ limiter, headers: 'legacy' })));
    expect((await request(a).get('/')).status).toBe(200);
    expect((await request(b).get('/')).status).toBe(200);
    expect((await request(a).get('/')).status).toBe(429);
    // @ts-expect-error core options beside a shared limiter do not compile either
    expect(() => rateLimit({ limiter, limits: { limit: 1, window: '1s' } })).toThrow(expect.objectContaining({ option: 'limits' }));
  });

  test('trust proxy true is warned about once per process; the warning can be turned off', async () => {
    resetWarnings();
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) };
    const quiet = appWith(
      rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 9, window: '1m' }, logger, warnings: { 'trust-proxy-all': false } }),
    );
    quiet.set('trust proxy', true);
    const quietUrl = await serve(quiet);
    await request(quietUrl).get('/');
    expect(warnings).toEqual([]);
    const loud = appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 9, window: '1m' }, logger }));
    loud.set('trust proxy', true);
    const url = await serve(loud);
    await request(url).get('/');
    await request(url).get('/');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/\[trust-proxy-all\].*'trust proxy' trusts every proxy hop/);
  });

  test("req.ip is worked out once a request, by the middleware and the trust check together (it is Express's getter)", async () => {
    resetWarnings();
    const app = appWith(
      rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 9, window: '1m' }, logger: { warn: () => undefined } }),
    );
    // A list of proxies and a forwarded header: the trust check reads the address on every request.
    app.set('trust proxy', 'loopback');
    const getter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(app.request), 'ip')!.get!;
    let reads = 0;
    Object.defineProperty(app.request, 'ip', {
      configurable: true,
      get(this: express.Request) {
        reads++;
        return getter.call(this) as string | undefined;
      },
    });
    const url = await serve(app);
    for (let i = 0; i < 3; i++) expect((await request(url).get('/').set('X-Forwarded-For', '203.0.113.7')).status).toBe(200);
    expect(reads).toBe(3);
  });

  test('an error thrown by identify() reaches the Express error handler, not the client as a 429', async () => {
    const app = appWith(
      rateLimit({
        redis,
        prefix: uniquePrefix('ex'),
        limits: { limit: 9, window: '1m' },
        identify: () => {
          throw new Error('boom');
        },
      }),
    );
    app.use(((err, _req, res, _next) => {
      res.status(500).json({ caught: (err as Error).message });
    }) as express.ErrorRequestHandler);
    const url = await serve(app);
    expect((await request(url).get('/')).body).toEqual({ caught: 'boom' });
  });

  /**
   * An app whose limiter (1 a minute) denies through `handler`, with an error handler that answers 500 and
   * records each error it gets. The first denial comes from Redis (asynchronously), the next from the block
   * cache (synchronously). Express 4 ignores a promise a middleware returns, so an error there would leave
   * the request hanging (supertest's timeout fails the test) and be an unhandled rejection (jest fails the
   * running test on one).
   */
  async function denyingThrough(handler: RateLimitOptions['handler']): Promise<{ url: string; caught: string[] }> {
    const caught: string[] = [];
    const app = appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 1, window: '1m' }, handler }));
    app.use(((err: Error, _req, res, _next) => {
      caught.push(err.message);
      res.status(500).json({ caught: err.message });
    }) as express.ErrorRequestHandler);
    const url = await serve(app);
    expect((await request(url).get('/')).status).toBe(200);
    return { url, caught };
  }

  test.each([
    ['throws', 'redis'],
    ['throws', 'cache'],
    ['returns a rejected promise', 'redis'],
    ['returns a rejected promise', 'cache'],
  ] as const)('a handler that %s for a denial from %s: the error handler answers 500', async (how, source) => {
    const { url, caught } = await denyingThrough((_req, res, _next, decision) => {
      if (decision.source !== source) return void res.status(429).end();
      if (how === 'throws') throw new Error('boom');
      return Promise.reject(new Error('boom'));
    });
    const redisDenial = await request(url).get('/').timeout(2000);
    const cacheDenial = await request(url).get('/').timeout(2000);
    const failed = source === 'redis' ? redisDenial : cacheDenial;
    expect([redisDenial.status, cacheDenial.status]).toEqual(source === 'redis' ? [500, 429] : [429, 500]);
    expect(failed.body).toEqual({ caught: 'boom' });
    expect(caught).toEqual(['boom']);
  });

  test('a handler that calls next(err) and then rejects: next runs once; the later error becomes a process warning', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const { url, caught } = await denyingThrough(async (_req, _res, next) => {
        next(new Error('first'));
        throw new Error('second');
      });
      expect((await request(url).get('/').timeout(2000)).body).toEqual({ caught: 'first' });
      await new Promise((resolve) => setImmediate(resolve));
      expect(caught).toEqual(['first']);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('second'), expect.anything());
    } finally {
      warn.mockRestore();
    }
  });
});
