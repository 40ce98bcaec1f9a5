import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { serveHttp, startExample, type Running } from '@floodgate/embedded-redis';
import { rateLimitResponseMeta } from '@floodgate/trpc';
import { createContext, createRouter, type AppRouter } from '../src/app';

/*
 * The tRPC example's router in this process, on the test Redis (src/server.ts is the program a user runs),
 * driven by the real client. The shared exampleSmoke() speaks REST routes; this is its tRPC equivalent.
 */
let running: Running;
beforeAll(async () => {
  running = await startExample(
    async (store, port) =>
      serveHttp(createHTTPServer({ router: createRouter(store), createContext, responseMeta: rateLimitResponseMeta }).listen(port)),
    { port: 0, redisUrl: testRedisUrl(), prefix: uniquePrefix('example-trpc') },
  );
});
afterAll(() => running.close());

const client = () => createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: running.url })] });
const codeOf = (result: PromiseSettledResult<unknown>) =>
  result.status === 'fulfilled' ? 'ok' : (result.reason as TRPCClientError<AppRouter>).data?.code;

test('search admits 3 calls per 10 s, then TOO_MANY_REQUESTS with the wait; hello stays open and carries the headers', async () => {
  const c = client();
  const results = await Promise.allSettled([1, 2, 3, 4].map(() => c.search.query({ q: 'x' })));
  expect(results.map(codeOf).sort()).toEqual(['TOO_MANY_REQUESTS', 'ok', 'ok', 'ok']);
  const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  expect((refused.reason as TRPCClientError<AppRouter>).data?.rateLimit?.retryAfter).toBeGreaterThanOrEqual(1);
  expect(await c.hello.query()).toEqual({ hello: 'world', remaining: expect.any(Number) });
  const res = await fetch(`${running.url}/hello`);
  expect(res.headers.get('ratelimit-policy')).toBe('"api-10s";q=20;w=10, "api-1h";q=500;w=3600');
});

test('login is limited per account, whatever the IP', async () => {
  const c = client();
  for (let i = 0; i < 5; i++) expect(await c.login.mutate({ username: 'ada' })).toMatchObject({ ok: false });
  const denied = await c.login.mutate({ username: 'ADA' }).catch((e: unknown) => e as TRPCClientError<AppRouter>);
  expect(denied).toBeInstanceOf(TRPCClientError);
  expect((denied as TRPCClientError<AppRouter>).message).toBe('Too many login attempts for this account; try again later');
  expect(await c.login.mutate({ username: 'grace' })).toMatchObject({ ok: false });
});
