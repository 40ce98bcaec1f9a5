import { TRPCClientError } from '@trpc/client';
import { createLimiter, type Decision } from '@floodgate/core';
import { settled } from '@floodgate/core/testing';
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { closeAfterEach, connect, keysUnder, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, rateLimitContext, rateLimitResponseMeta, type RateLimitBaseOptions, type RateLimitOptions } from '@floodgate/trpc';
import { clientOf, makeRouter, serveRouter, type Context, type Meta } from './app';

const redis = connect();
// Every limiter here waits 10 s for Redis: the deadline is not these tests' subject (a loaded machine's first check can take longer).
const closing = closeAfterEach();

const base = (extra: RateLimitBaseOptions<Context, Meta> = {}): RateLimitOptions<Context, Meta> =>
  ({ redis, timeoutMs: 10_000, prefix: uniquePrefix('trpc'), limits: { limit: 2, window: '1m' }, ...extra }) as RateLimitOptions<
    Context,
    Meta
  >;
const serve = async (extra: RateLimitBaseOptions<Context, Meta> = {}) => {
  const { router, counts } = makeRouter(closing(rateLimit(base(extra))));
  return { counts, ...closing(await serveRouter(router)) };
};
/** One GET of a procedure, or of a batch of them (`hit,hit`), as the client sends it: status, headers, body. */
const get = async (url: string, paths: string[], headers: Record<string, string> = {}) => {
  const batch = paths.length > 1 ? `?batch=1&input=${encodeURIComponent(JSON.stringify({}))}` : '';
  const res = await fetch(`${url}/${paths.join(',')}${batch}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as unknown };
};

test('a single call: draft-8 headers through responseMeta, then a 429 with Retry-After and the wait in the error data', async () => {
  const app = await serve();
  const first = await get(app.url, ['hit']);
  expect(first.status).toBe(200);
  expect(first.headers.get('ratelimit-policy')).toBe('"1m";q=2;w=60');
  expect(first.headers.get('ratelimit')).toMatch(/^"1m";r=1;t=\d+$/);
  expect((await get(app.url, ['hit'])).status).toBe(200);
  const denied = await get(app.url, ['hit']);
  expect(denied.status).toBe(429);
  const retry = Number(denied.headers.get('retry-after'));
  expect(retry).toBeGreaterThanOrEqual(1);
  expect(retry).toBeLessThanOrEqual(66);
  expect(denied.headers.get('ratelimit')).toMatch(/^"1m";r=0;t=\d+$/);
  expect(denied.body).toMatchObject({
    error: {
      message: expect.stringContaining('Rate limit exceeded'),
      data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429, rateLimit: { retryAfter: retry, retryAfterMs: expect.any(Number) } },
    },
  });
  expect(app.counts.hit).toBe(2);
});

test("a batch's headers are its most restrictive decision: the denial's Retry-After and r=0", async () => {
  const app = await serve({ limits: { limit: 3, window: '1m' } });
  const res = await get(app.url, ['hit', 'hit', 'hit', 'hit', 'hit']);
  // Mixed results: tRPC answers 207, each call its own result.
  expect(res.status).toBe(207);
  const results = res.body as { result?: unknown; error?: { data: { code: string } } }[];
  expect(results.filter((r) => r.result !== undefined)).toHaveLength(3);
  expect(results.filter((r) => r.error?.data.code === 'TOO_MANY_REQUESTS')).toHaveLength(2);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get('ratelimit')).toMatch(/^"1m";r=0;t=\d+$/);
  // One limiter, one item: the calls of a batch do not repeat it.
  expect(res.headers.get('ratelimit-policy')).toBe('"1m";q=3;w=60');
});

test('an admitted batch reports the fewest remaining; a procedure without the middleware adds nothing', async () => {
  const app = await serve({ limits: { limit: 10, window: '1m' } });
  const res = await get(app.url, ['hit', 'open', 'hit', 'hit']);
  expect(res.status).toBe(200);
  expect(res.headers.get('ratelimit')).toMatch(/^"1m";r=7;t=\d+$/);
  expect(res.headers.get('retry-after')).toBeNull();
  expect((await get(app.url, ['open'])).headers.get('ratelimit')).toBeNull();
});

test('identity: the client address from rateLimitContext and the signed-in user (ctx.user.id) by default; identify() reads the call', async () => {
  const app = await serve({ limits: { limit: 1, window: '1m' } });
  // Two users behind one address: the address is counted too (ip and user are both identifiers).
  expect((await get(app.url, ['hit'], { 'x-user': 'ada' })).status).toBe(200);
  expect((await get(app.url, ['hit'], { 'x-user': 'grace' })).status).toBe(429);

  const byKey = await serve({ limits: { limit: 1, window: '1m' }, identify: ({ ctx }) => `user:${ctx.user?.id ?? 'anonymous'}` });
  expect((await get(byKey.url, ['hit'], { 'x-user': 'ada' })).status).toBe(200);
  expect((await get(byKey.url, ['hit'], { 'x-user': 'grace' })).status).toBe(200);
  expect((await get(byKey.url, ['hit'], { 'x-user': 'ada' })).status).toBe(429);
});

test('clientAddress() replaces the default address; an address it cannot give is ip:unknown, never unlimited', async () => {
  const seen: string[][] = [];
  const app = await serve({
    limits: { limit: 1, window: '1m' },
    clientAddress: ({ ctx }) => (ctx.user?.id === 'ada' ? '203.0.113.7' : undefined),
    identify: (_call, defaults) => (seen.push(defaults), defaults),
    warnings: false,
  });
  expect((await get(app.url, ['hit'], { 'x-user': 'ada' })).status).toBe(200);
  expect((await get(app.url, ['hit'], { 'x-user': 'bob' })).status).toBe(200);
  expect((await get(app.url, ['hit'], { 'x-user': 'eve' })).status).toBe(429);
  expect(seen).toEqual([
    ['ip:203.0.113.7', 'user:ada'],
    ['ip:unknown', 'user:bob'],
    ['ip:unknown', 'user:eve'],
  ]);
});

test('hostile identifiers from a client-controlled header never crash, collide or escape the prefix', async () => {
  const prefix = uniquePrefix('trpc');
  const app = await serve({ prefix, limits: { limit: 1, window: '1m' }, identify: ({ ctx }) => `key:${ctx.user?.id ?? ''}` });
  const hostile = ['a}:{b', '../../x', `${'z'.repeat(5000)}`, '*', 'a b', '{ada}', 'ümlaut'];
  for (const id of hostile) expect((await get(app.url, ['hit'], { 'x-user': encodeURIComponent(id) })).status).toBe(200);
  for (const id of hostile) expect((await get(app.url, ['hit'], { 'x-user': encodeURIComponent(id) })).status).toBe(429);
  const keys = await keysUnder(redis, prefix);
  expect(keys.every((k) => k.startsWith(`${prefix}:`) && k.length < prefix.length + 120)).toBe(true);
});

test('the decision reaches the procedure as ctx.rateLimit (typed), the tightest of two limiters', async () => {
  const prefix = uniquePrefix('trpc');
  const outer = closing(rateLimit<Context, Meta>({ redis, timeoutMs: 10_000, prefix, limits: { limit: 5, window: '1m' } }));
  const inner = closing(rateLimit<Context, Meta>({ redis, timeoutMs: 10_000, prefix, name: 'inner', limits: { limit: 2, window: '1m' } }));
  const t = initTRPC.context<Context>().meta<Meta>().create();
  const seen: (Decision | undefined)[] = [];
  const router = t.router({
    hit: t.procedure
      .use(outer)
      .use(inner)
      .query(({ ctx }) => (seen.push(ctx.rateLimit), 'ok')),
  });
  const server = createHTTPServer({ router, createContext: ({ req }) => rateLimitContext(req), responseMeta: rateLimitResponseMeta });
  const { url } = closing(await serveHttp(server.listen(0, '127.0.0.1')));
  const res = await fetch(`${url}/hit`);
  expect(seen[0]?.remaining).toBe(1);
  expect(res.headers.get('ratelimit')).toMatch(/^"1m";r=4;t=\d+, "inner-1m";r=1;t=\d+$/);
});

test('subscriptions: each start is a check; a refused start reaches the client as TOO_MANY_REQUESTS', async () => {
  const app = await serve({ limits: { limit: 2, window: '1m' } });
  const client = clientOf(app.url);
  const run = () =>
    new Promise<number[] | TRPCClientError<never>>((resolve) => {
      const got: number[] = [];
      const sub = client.ticks.subscribe(undefined, {
        onData: (n) => {
          got.push(n);
          if (got.length === 3) {
            sub.unsubscribe();
            resolve(got);
          }
        },
        onError: (error) => {
          sub.unsubscribe();
          resolve(error as TRPCClientError<never>);
        },
      });
    });
  expect(await run()).toEqual([0, 1, 2]);
  expect(await run()).toEqual([0, 1, 2]);
  const refused = await run();
  expect(refused).toBeInstanceOf(TRPCClientError);
  expect((refused as TRPCClientError<never>).data).toMatchObject({ code: 'TOO_MANY_REQUESTS' });
  expect(app.counts.ticks).toBe(2);
});

test('skipFailedRequests gives a failed call back once its procedure has thrown', async () => {
  const limiter = closing(
    createLimiter({ redis, timeoutMs: 10_000, prefix: uniquePrefix('trpc'), limits: { limit: 2, window: '1m' }, refunds: true }),
  );
  const limit = closing(rateLimit<Context, Meta>({ limiter, skipFailedRequests: true }));
  const t = initTRPC.context<Context>().create();
  const router = t.router({
    fail: t.procedure.use(limit).query(() => {
      throw new TRPCError({ code: 'BAD_REQUEST' });
    }),
  });
  const { url } = closing(
    await serveHttp(createHTTPServer({ router, createContext: ({ req }) => rateLimitContext(req) }).listen(0, '127.0.0.1')),
  );
  for (let i = 0; i < 5; i++) {
    expect((await fetch(`${url}/fail`)).status).toBe(400);
    await settled();
  }
});

test('invalid options throw at construction, naming the option', () => {
  const limiter = closing(createLimiter({ redis, timeoutMs: 10_000, prefix: uniquePrefix('trpc'), limits: { limit: 1, window: '1m' } }));
  expect(() => rateLimit({ limiter, statusCode: 418 })).toThrow(
    expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'statusCode' }),
  );
  expect(() => rateLimit({ limiter, denyStatusCode: 404 })).toThrow(expect.objectContaining({ option: 'denyStatusCode' }));
  expect(() => rateLimit({ limiter, clientAddress: '1.2.3.4' as never })).toThrow(expect.objectContaining({ option: 'clientAddress' }));
  expect(() => rateLimit({ limiter, identifyy: () => 'x' } as never)).toThrow(expect.objectContaining({ option: 'identifyy' }));
  expect(() => rateLimit({ limiter, statusCode: 503 })).not.toThrow();
});

test('a polluted Object.prototype cannot switch limiting off: options are read as own properties (over HTTP, and `mode` through a caller)', async () => {
  const proto = Object.prototype as Record<string, unknown>;
  // What tRPC's Node adapter serves under: `mode` on the prototype breaks its Fetch Request (a 500 before any middleware).
  const served = { unidentified: 'allow', skip: () => true, penalty: 'yes', blockCache: 'no' };
  Object.assign(proto, served);
  try {
    const app = await serve({ limits: { limit: 3, window: '1m' } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(app.url, ['hit'])).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(app.counts.hit).toBe(3);
  } finally {
    for (const key of Object.keys(served)) delete proto[key];
  }
  proto.mode = 'shadow';
  try {
    const limit = closing(rateLimit<Context, Meta>(base({ limits: { limit: 2, window: '1m' } })));
    const { router, counts } = makeRouter(limit);
    const t = initTRPC.context<Context>().meta<Meta>().create();
    const caller = t.createCallerFactory(router)({ clientAddress: '192.0.2.9' });
    const results = await Promise.allSettled([caller.hit(), caller.hit(), caller.hit()]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect(counts.hit).toBe(2);
  } finally {
    delete proto.mode;
  }
});
