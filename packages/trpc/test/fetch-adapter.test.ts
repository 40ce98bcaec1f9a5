import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { incomingMessageToRequest } from '@trpc/server/adapters/node-http';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, rateLimitContext, rateLimitResponseMeta } from '@floodgate/trpc';
import { clientOf, makeRouter, type AppRouter, type Context, type Meta } from './app';

/*
 * tRPC's fetch adapter, as a Next.js route handler uses it: the router is served from a Fetch `Request`,
 * and answers a `Response`. Here a Node server turns each request into a `Request` (tRPC's own
 * incomingMessageToRequest) and writes the `Response` back, over a real socket; the peer address is handed
 * to rateLimitContext as a runtime that exposes it would, or not at all, as in Next.js.
 */

const redis = connect();
// Every limiter here waits 10 s for Redis: the deadline is not these tests' subject (a loaded machine's first check can take longer).
const closing = closeAfterEach();

async function serveFetch(router: AppRouter, { peer = true } = {}) {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const request = incomingMessageToRequest(req, res, { maxBodySize: null });
    void fetchRequestHandler({
      endpoint: '',
      req: request,
      router,
      createContext: ({ req: fetched }) => rateLimitContext(fetched, peer ? { peer: req.socket.remoteAddress } : {}),
      responseMeta: rateLimitResponseMeta,
    }).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body === null) return void res.end();
      Readable.fromWeb(response.body as never).pipe(res);
    });
  });
  return serveHttp(server.listen(0, '127.0.0.1'));
}

test('the fetch adapter: a batch of 30 against a limit of 10 runs 10 bodies, and its response carries the most restrictive headers', async () => {
  const { router, counts } = makeRouter(
    closing(rateLimit<Context, Meta>({ redis, timeoutMs: 10_000, prefix: uniquePrefix('trpc'), limits: { limit: 10, window: '1m' } })),
  );
  const { url } = closing(await serveFetch(router));
  const client = clientOf(url);
  const results = await Promise.allSettled(Array.from({ length: 30 }, () => client.hit.query()));
  expect(counts.hit).toBe(10);
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
  const res = await fetch(`${url}/hit,hit?batch=1&input=%7B%7D`);
  expect(res.status).toBe(429);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get('ratelimit')).toMatch(/^"1m";r=0;t=\d+$/);
});

test('the fetch adapter: the peer the runtime gives is the client address; without one every client shares ip:unknown', async () => {
  const seen: string[][] = [];
  const { router } = makeRouter(
    closing(
      rateLimit<Context, Meta>({
        redis,
        timeoutMs: 10_000,
        prefix: uniquePrefix('trpc'),
        limits: { limit: 5, window: '1m' },
        identify: (_call, defaults) => (seen.push(defaults), defaults),
      }),
    ),
  );
  const { url } = closing(await serveFetch(router));
  await clientOf(url).hit.query();
  expect(seen).toEqual([['ip:127.0.0.1']]);
  const request = new Request('http://localhost/hit', { headers: { 'x-forwarded-for': '203.0.113.9' } });
  expect(rateLimitContext(request)).toMatchObject({ clientAddress: undefined, forwardedFor: '203.0.113.9' });
});

test('no peer, as in Next.js: trustProxy 1 takes the entry the one proxy appended, never the one a client wrote', async () => {
  const seen: string[][] = [];
  const { router } = makeRouter(
    closing(
      rateLimit<Context, Meta>({
        redis,
        timeoutMs: 10_000,
        prefix: uniquePrefix('trpc'),
        limits: { limit: 1, window: '1m' },
        trustProxy: 1,
        identify: (_call, defaults) => (seen.push(defaults), defaults),
      }),
    ),
  );
  const { url } = closing(await serveFetch(router, { peer: false }));
  const get = async (forwarded: string) => (await fetch(`${url}/hit`, { headers: { 'x-forwarded-for': forwarded } })).status;
  expect(await get('203.0.113.5')).toBe(200);
  expect(await get('6.6.6.6, 203.0.113.5')).toBe(429);
  expect(await get('203.0.113.6')).toBe(200);
  expect(seen.map(([ip]) => ip)).toEqual(['ip:203.0.113.5', 'ip:203.0.113.5', 'ip:203.0.113.6']);
});
