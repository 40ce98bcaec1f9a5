import { request as httpRequest } from 'node:http';
import { Redis } from 'ioredis';
import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { defineClient } from '@floodgate/core';
import { closeAfterEach, connect, keysUnder, serveHttp, uniquePrefix } from '@floodgate/testing';
import {
  rateLimit,
  rateLimitContext,
  rateLimitErrorFormatter,
  rateLimitResponseMeta,
  type RateLimitBaseOptions,
  type RateLimitOptions,
} from '@floodgate/trpc';

/*
 * docs/migrating/trpc-middleware.md, checked: the guide's "After" program (its middleware, server and batch
 * of 101 calls) on the standalone adapter over a real socket, and every row of "What changes", against the
 * test Redis: what the hand-written INCR/EXPIRE middleware did, and what the guide says differs.
 */
const redis = connect();
const closed = closeAfterEach();

// The guide's context, with what an auth step would add (x-user) and an API key (x-api-key) for the rows that need them.
type Req = Parameters<typeof rateLimitContext>[0] & { headers: Record<string, string | string[] | undefined> };
const createContext = ({ req }: { req: Req }) => {
  const user = req.headers['x-user'];
  const apiKey = req.headers['x-api-key'];
  return {
    ...rateLimitContext(req),
    user: typeof user === 'string' ? { id: user } : undefined,
    apiKey: typeof apiKey === 'string' ? apiKey : 'none',
  };
};
type Context = Awaited<ReturnType<typeof createContext>>;
type Meta = { cost?: number };
const t = initTRPC.context<Context>().meta<Meta>().create({ errorFormatter: rateLimitErrorFormatter });

/** The guide's middleware (100 a minute, message 'Slow down') unless `options` say otherwise, on a prefix of its own. */
const middlewareOf = (options: RateLimitBaseOptions<Context, Meta> = {}) =>
  closed(
    rateLimit<Context, Meta>({
      redis,
      prefix: uniquePrefix('trpcmw'),
      limits: { limit: 100, window: '1m' },
      message: 'Slow down',
      ...options,
    } as RateLimitOptions<Context, Meta>),
  );
let bodies = 0;
beforeEach(() => (bodies = 0));
/** The guide's router (`ping`) behind the middleware, plus a costly mutation and a health check. */
function routerOf(rateLimited: ReturnType<typeof middlewareOf>) {
  const limitedProcedure = t.procedure.use(rateLimited);
  return t.router({
    ping: limitedProcedure.query(() => (bodies++, 'pong')),
    spend: limitedProcedure.meta({ cost: 3 }).mutation(() => (bodies++, 'spent')),
    health: limitedProcedure.query(() => 'ok'),
  });
}
type AppRouter = ReturnType<typeof routerOf>;
/** The router served on the standalone adapter: its URL, the guide's client (httpBatchLink), the HTTP requests it took. */
async function serve(rateLimited: ReturnType<typeof middlewareOf>) {
  const router = routerOf(rateLimited);
  let requests = 0;
  const server = createHTTPServer({ router, createContext, responseMeta: rateLimitResponseMeta });
  server.on('request', () => requests++);
  const { url } = closed(await serveHttp(server.listen(0, '127.0.0.1')));
  const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url })] });
  return { url, client, requests: () => requests };
}
/** One GET of `path` from `from` (a loopback address of this host), as the HTTP link sends a single call. */
const call = (url: string, path = 'ping', headers: Record<string, string> = {}, from = '127.0.0.1') =>
  new Promise<{ status: number; headers: Record<string, unknown>; body: { error?: { message: string; data: Record<string, unknown> } } }>(
    (resolve, reject) => {
      const req = httpRequest(`${url}/${path}`, { headers, localAddress: from, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
      });
      req.on('error', reject).end();
    },
  );
const statuses = async (n: number, ...args: Parameters<typeof call>): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(...args)).status);
  return out;
};

test("the guide's program: one batch of 101 calls, 100 answer 'pong', one fails alone with the message and the wait", async () => {
  const { url, client, requests } = await serve(middlewareOf());
  const results = await Promise.allSettled(Array.from({ length: 101 }, () => client.ping.query()));
  expect(requests()).toBe(1);
  expect(results.filter((r) => r.status === 'fulfilled').map((r) => r.value)).toEqual(Array(100).fill('pong'));
  const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as TRPCClientError<AppRouter>] : []));
  expect(refused).toHaveLength(1);
  expect(results[100]!.status).toBe('rejected'); // the last: the checks reach Redis in the order of the calls
  expect(refused[0]).toBeInstanceOf(TRPCClientError);
  expect([refused[0]!.message, refused[0]!.data?.code, refused[0]!.data?.httpStatus]).toEqual(['Slow down', 'TOO_MANY_REQUESTS', 429]);
  expect(refused[0]!.data?.rateLimit?.retryAfterMs).toBeGreaterThan(0);
  expect(bodies).toBe(100);
  // A bare TOO_MANY_REQUESTS before; now Retry-After and RateLimit headers on the response too.
  const denied = await call(url);
  expect([denied.status, denied.body.error?.message, denied.body.error?.data['code']]).toEqual([429, 'Slow down', 'TOO_MANY_REQUESTS']);
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(denied.headers).toMatchObject({ 'ratelimit-policy': '"1m";q=100;w=60', ratelimit: expect.stringMatching(/^"1m";r=0;t=\d+$/) });
});

test('INCR then EXPIRE -> one script per check: every key it wrote has a TTL', async () => {
  const rateLimited = middlewareOf();
  const { url } = await serve(rateLimited);
  expect(await statuses(3, url)).toEqual([200, 200, 200]);
  const keys = await keysUnder(redis, rateLimited.limiter.prefix);
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(0);
});

test("a fixed window -> a sliding one by default; algorithm: 'fixed-window' keeps the old behaviour", async () => {
  expect(middlewareOf().limiter.algorithm).toBe('sliding-window');
  const fixed = middlewareOf({ limits: { limit: 2, window: '1m' }, algorithm: 'fixed-window' });
  expect(fixed.limiter.algorithm).toBe('fixed-window');
  expect(await statuses(3, (await serve(fixed)).url)).toEqual([200, 200, 429]);
});

test('the first X-Forwarded-For entry -> the connection peer: a forged header buys no new budget', async () => {
  const { url } = await serve(middlewareOf({ limits: { limit: 2, window: '1m' }, logger: { warn: () => undefined } }));
  const out = [];
  for (const ip of ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4']) out.push((await call(url, 'ping', { 'x-forwarded-for': ip })).status);
  expect(out).toEqual([200, 200, 429, 429]);
});

test('the user or the IP -> both: users behind one address share it; one user across addresses is one user', async () => {
  const { url } = await serve(middlewareOf({ limits: { limit: 2, window: '1m' } }));
  expect(await statuses(2, url, 'ping', { 'x-user': 'alice' })).toEqual([200, 200]);
  expect(await statuses(1, url, 'ping', { 'x-user': 'bob' })).toEqual([429]); // 127.0.0.1 is spent
  expect(await statuses(1, url, 'ping', { 'x-user': 'alice' }, '127.0.0.2')).toEqual([429]); // alice is spent
  expect(await statuses(2, url, 'ping', { 'x-user': 'bob' }, '127.0.0.3')).toEqual([200, 200]);
});

test("`rl:${user ?? ip}` let a user named 127.0.0.1 spend that address's budget; identifiers are encoded, under the prefix", async () => {
  const rateLimited = middlewareOf({ limits: { limit: 2, window: '1m' } });
  const { url } = await serve(rateLimited);
  expect(await statuses(3, url, 'ping', { 'x-user': '127.0.0.1' }, '127.0.0.2')).toEqual([200, 200, 429]);
  expect(await statuses(1, url, 'ping', {}, '127.0.0.1')).toEqual([200]);
  expect(await statuses(2, url, 'ping', { 'x-user': 'x}:{ip:127.0.0.4' }, '127.0.0.5')).toEqual([200, 200]);
  expect(await statuses(1, url, 'ping', {}, '127.0.0.4')).toEqual([200]);
  for (const key of await keysUnder(redis, rateLimited.limiter.prefix)) expect(key.startsWith(`${rateLimited.limiter.prefix}:`)).toBe(true);
});

test("Redis down: 'open' (the default) admits up to each limit per process, 'closed' is SERVICE_UNAVAILABLE, 'local' limits here", async () => {
  const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, disconnectTimeout: 100 });
  closed({ close: async () => dead.disconnect() });
  const quiet = {
    redis: dead,
    limits: { limit: 2, window: '1m' },
    timeoutMs: 2000,
    logger: { warn: () => undefined, error: () => undefined },
  };
  expect(await statuses(3, (await serve(middlewareOf(quiet))).url)).toEqual([200, 200, 429]);
  const refused = await call((await serve(middlewareOf({ ...quiet, failure: 'closed' }))).url);
  expect([refused.status, refused.body.error?.data['code']]).toEqual([503, 'SERVICE_UNAVAILABLE']);
  expect(await statuses(3, (await serve(middlewareOf({ ...quiet, failure: 'local' }))).url)).toEqual([200, 200, 429]);
});

test('a round trip per call -> the checks of one turn share Redis calls: a batch of N calls in at most ⌈N / 16⌉ script calls', async () => {
  let scripts = 0;
  // EVAL follows an EVALSHA only after NOSCRIPT (the same call, sent again): script calls are the EVALSHAs.
  const counting = defineClient({
    evalsha: (sha: string, keys: string[], args: string[]) => (scripts++, redis.evalsha(sha, keys.length, ...keys, ...args)),
    eval: (script: string, keys: string[], args: string[]) => redis.eval(script, keys.length, ...keys, ...args),
    del: (key: string) => redis.del(key),
  });
  const { client } = await serve(middlewareOf({ redis: counting }));
  // The limiter's first check also records its configuration (once per limiter): out of the count.
  await client.ping.query();
  scripts = 0;
  const results = await Promise.allSettled(Array.from({ length: 99 }, () => client.ping.query()));
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(99);
  expect(scripts).toBeGreaterThanOrEqual(1);
  expect(scripts).toBeLessThanOrEqual(Math.ceil(99 / 16));
});

test('a batch counts each call; cost from meta, identify and skip as options', async () => {
  const costly = await serve(middlewareOf({ limits: { limit: 10, window: '1m' }, cost: ({ meta }) => meta?.cost ?? 1 }));
  const spent = await Promise.allSettled(Array.from({ length: 5 }, () => costly.client.spend.mutate()));
  expect([spent.filter((r) => r.status === 'fulfilled').length, bodies]).toEqual([3, 3]);
  const keyed = await serve(middlewareOf({ limits: { limit: 2, window: '1m' }, identify: ({ ctx }) => ctx.apiKey }));
  expect(await statuses(3, keyed.url, 'ping', { 'x-api-key': 'k1' })).toEqual([200, 200, 429]);
  expect(await statuses(2, keyed.url, 'ping', { 'x-api-key': 'k2' })).toEqual([200, 200]);
  const skipping = await serve(middlewareOf({ limits: { limit: 1, window: '1m' }, skip: ({ path }) => path === 'health' }));
  expect(await statuses(3, skipping.url, 'health')).toEqual([200, 200, 200]);
  expect(await statuses(2, skipping.url)).toEqual([200, 429]);
});
