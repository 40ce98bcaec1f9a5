import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { resetWarnings } from '@floodgate/core/adapter';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, rateLimitContext, rateLimitResponseMeta, type RateLimitBaseOptions, type RateLimitOptions } from '@floodgate/trpc';
import { makeRouter, serveRouter, type Context, type Meta } from './app';

/*
 * Policies through tRPC's own client-facing shapes (the shared suites run through app-factory.ts, with its
 * REST paths mapped to procedures): each refusal is a TRPCError, its status tRPC's for that code.
 */

const redis = connect();
// Every limiter here waits 10 s for Redis: the deadline is not these tests' subject (a loaded machine's first check can take longer).
const closing = closeAfterEach();
const quiet = { warn: () => undefined };
beforeEach(() => resetWarnings());

const base = (extra: RateLimitBaseOptions<Context, Meta>): RateLimitOptions<Context, Meta> =>
  ({ redis, timeoutMs: 10_000, prefix: uniquePrefix('trpc'), limits: { limit: 3, window: '1m' }, ...extra }) as RateLimitOptions<
    Context,
    Meta
  >;
async function serve(extra: RateLimitBaseOptions<Context, Meta>) {
  const { router, counts } = makeRouter(closing(rateLimit(base(extra))));
  return { counts, ...closing(await serveRouter(router)) };
}
const call = async (url: string, path = 'hit') => {
  const res = await fetch(`${url}/${path}`);
  return { status: res.status, headers: res.headers, body: (await res.json()) as { error?: { message: string; data: { code: string } } } };
};
const statuses = async (url: string, n: number) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(url)).status);
  return out;
};

test("Redis unreachable: failure 'closed' answers SERVICE_UNAVAILABLE (503) with Retry-After and no driver text; 'open' lets the call run", async () => {
  const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, disconnectTimeout: 100 });
  closing({ close: async () => dead.disconnect() });
  const closed = await serve({ redis: dead, failure: 'closed', timeoutMs: 2000, logger: quiet });
  const refused = await call(closed.url);
  expect(refused.status).toBe(503);
  expect(refused.body.error?.data.code).toBe('SERVICE_UNAVAILABLE');
  expect(refused.body.error?.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|redis/i);
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(refused.headers.get('ratelimit')).toBeNull();
  expect(closed.counts.hit).toBe(0);

  const open = await serve({ redis: dead, failure: 'open', timeoutMs: 2000, logger: quiet });
  expect((await call(open.url)).status).toBe(200);
  expect(open.counts.hit).toBe(1);
});

test('shadow mode and skip() never refuse and write no rate-limit headers', async () => {
  const shadow = await serve({ mode: 'shadow', logger: quiet });
  expect(await statuses(shadow.url, 5)).toEqual([200, 200, 200, 200, 200]);
  expect((await call(shadow.url)).headers.get('ratelimit')).toBeNull();
  const skipped = await serve({ skip: ({ path }) => path === 'hit' });
  expect(await statuses(skipped.url, 5)).toEqual([200, 200, 200, 200, 200]);
  expect((await call(skipped.url)).headers.get('ratelimit-policy')).toBeNull();
});

test('the deny list refuses with FORBIDDEN (403) before anything is counted; statusCode and message shape the refusal', async () => {
  const denied = await serve({ deny: ['127.0.0.1'] });
  const res = await call(denied.url);
  expect([res.status, res.body.error?.data.code]).toEqual([403, 'FORBIDDEN']);
  expect(denied.counts.hit).toBe(0);

  const shaped = await serve({
    statusCode: 503,
    message: ({ path }, decision) => `${path}: wait ${Math.ceil(decision.retryAfterMs / 1000)} s`,
  });
  expect(await statuses(shaped.url, 3)).toEqual([200, 200, 200]);
  const refused = await call(shaped.url);
  expect([refused.status, refused.body.error?.data.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
  expect(refused.body.error?.message).toMatch(/^hit: wait \d+ s$/);
  const objectMessage = await serve({ limits: { limit: 1, window: '1m' }, message: { message: 'Slow down', extra: 1 } });
  await call(objectMessage.url);
  expect((await call(objectMessage.url)).body.error?.message).toBe('Slow down');
});

test('identify() giving nothing usable falls back to the default identifiers, with one warning', async () => {
  const warnings: string[] = [];
  const app = await serve({ identify: ({ ctx }) => ctx.user?.id ?? [], logger: { warn: (m) => warnings.push(m) } });
  expect(await statuses(app.url, 4)).toEqual([200, 200, 200, 429]);
  expect(warnings.filter((w) => /identify-empty/.test(w))).toHaveLength(1);
});

test('a polluted Object.prototype cannot switch limiting off (options are read as own properties)', async () => {
  const proto = Object.prototype as Record<string, unknown>;
  const pollute = async (polluted: Record<string, unknown>) => {
    Object.assign(proto, polluted);
    try {
      const app = await serve({});
      return { statuses: await statuses(app.url, 4), hits: app.counts.hit };
    } finally {
      for (const key of Object.keys(polluted)) delete proto[key];
    }
  };
  const polluted = { unidentified: 'allow', skip: () => true, clientAddress: () => '10.9.9.9', trustProxy: 0, penalty: 'yes' };
  expect(await pollute(polluted)).toEqual({ statuses: [200, 200, 200, 429], hits: 3 });
  // `mode` on the prototype breaks undici's Request, which tRPC's Node adapter builds: every call is a 500 and none runs.
  expect(await pollute({ mode: 'shadow' })).toEqual({ statuses: [500, 500, 500, 500], hits: 0 });
});

test('a unix socket (no client address): one shared budget ip:unknown, never unlimited', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-trpc-sock-'));
  try {
    const { router, counts } = makeRouter(closing(rateLimit(base({ logger: quiet }))));
    const server = createHTTPServer({ router, createContext: ({ req }) => rateLimitContext(req), responseMeta: rateLimitResponseMeta });
    const socketPath = join(dir, 'app.sock');
    closing(await serveHttp(server.listen(socketPath)));
    const get = () =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({ socketPath, path: '/hit', agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject).end();
      });
    const got: number[] = [];
    for (let i = 0; i < 5; i++) got.push(await get());
    expect(got).toEqual([200, 200, 200, 429, 429]);
    expect(counts.hit).toBe(3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
