import type { Redis } from 'ioredis';
import { closeAfterEach, closeClients, commandStats, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';
import { rateLimit } from '@floodgate/trpc';
import { clientOf, makeRouter, serveRouter, type Context, type Meta } from './app';

/*
 * What a batch costs Redis: the calls of one batched request are checked in one script call (docs/trpc.md,
 * "Batches"), up to 1,000 calls a script call. Counted with INFO commandstats (EVALSHA and EVAL: the Redis
 * store sends its scripts by EVALSHA, and EVAL after a NOSCRIPT) on a redis-server of this test's own, which
 * nothing else calls.
 */

const closing = closeAfterEach();
let server: StartedRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = connect(server.url);
});
afterAll(async () => {
  await closeClients();
  await server.stop();
});

const scriptCalls = async (): Promise<number> => {
  const stats = await commandStats(redis);
  return (stats.evalsha ?? 0) + (stats.eval ?? 0) + (stats.fcall ?? 0);
};

/** Script calls one request of `n` calls (httpBatchLink, one HTTP request) costs, every call admitted. */
async function scriptCallsOfBatch(n: number): Promise<number> {
  const limit = closing(
    rateLimit<Context, Meta>({ redis, prefix: uniquePrefix('trpc-calls'), timeoutMs: 10_000, limits: { limit: 1_000_000, window: '1h' } }),
  );
  const { router, counts } = makeRouter(limit);
  const served = closing(await serveRouter(router));
  const client = clientOf(served.url);
  // Warm-up: the client connected, the registry written, the check script and the batch script loaded.
  await client.hit.query();
  await Promise.all([client.hit.query(), client.hit.query()]);
  const before = await scriptCalls();
  const results = await Promise.all(Array.from({ length: n }, () => client.hit.query()));
  const calls = (await scriptCalls()) - before;
  expect(served.requests()).toBe(3);
  expect(counts.hit).toBe(n + 3);
  expect(results.every((r) => typeof r.remaining === 'number')).toBe(true);
  return calls;
}

test('a batch of 100 calls is checked in one script call', async () => {
  expect(await scriptCallsOfBatch(100)).toBe(1);
});

test('a batch of 1,000 calls is one script call; one of 1,001 is two (at most 1,000 checks a call)', async () => {
  expect(await scriptCallsOfBatch(1_000)).toBe(1);
  expect(await scriptCallsOfBatch(1_001)).toBe(2);
});

test("a batch past tRPC's maxBatchSize is refused whole, before any call runs: no body, no script call", async () => {
  const limit = closing(
    rateLimit<Context, Meta>({ redis, prefix: uniquePrefix('trpc-calls'), timeoutMs: 10_000, limits: { limit: 1_000_000, window: '1h' } }),
  );
  const { router, counts } = makeRouter(limit);
  const served = closing(await serveRouter(router, { maxBatchSize: 100 }));
  const client = clientOf(served.url);
  await client.hit.query();
  const before = await scriptCalls();
  const results = await Promise.allSettled(Array.from({ length: 101 }, () => client.hit.query()));
  expect(results.every((r) => r.status === 'rejected')).toBe(true);
  expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ data: { httpStatus: 400 } });
  expect(counts.hit).toBe(1);
  expect((await scriptCalls()) - before).toBe(0);
});
