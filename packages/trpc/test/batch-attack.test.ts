import { TRPCClientError } from '@trpc/client';
import { createLimiter } from '@floodgate/core';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { rateLimit } from '@floodgate/trpc';
import { clientOf, makeRouter, serveRouter, type Context, type Meta } from './app';

/*
 * The batch attack (docs/security.md): one HTTP request carrying 1,000 calls against a limit of 100. The
 * calls of a batch run concurrently, each a check of its own; the limiter's atomicity in Redis is what makes
 * the total exact. Counted where it matters: the procedure bodies that ran.
 */

const redis = connect();
const closing = closeAfterEach();
const figures = process.env.FLOODGATE_FLOOD_FIGURES === '1';
// The deadline is not the subject: on a loaded machine 1,000 checks at once may wait longer than the default.
const timeoutMs = 10_000;

test('a batch of 1,000 calls against a limit of 100 runs exactly 100 procedure bodies; the other 900 fail alone with TOO_MANY_REQUESTS', async () => {
  const limit = closing(rateLimit<Context, Meta>({ redis, prefix: uniquePrefix('trpc'), timeoutMs, limits: { limit: 100, window: '1m' } }));
  const { router, counts } = makeRouter(limit);
  const served = closing(await serveRouter(router));
  const client = clientOf(served.url);
  const results = await Promise.allSettled(Array.from({ length: 1000 }, () => client.hit.query()));
  expect(served.requests()).toBe(1);
  const admitted = results.filter((r) => r.status === 'fulfilled').length;
  const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as TRPCClientError<typeof router>] : []));
  if (figures)
    process.stdout.write(
      `trpc batch attack: 1000 calls, limit 100: ${counts.hit} bodies ran, ${admitted} admitted, ${refused.length} refused\n`,
    );
  expect(counts.hit).toBe(100);
  expect(admitted).toBe(100);
  expect(refused).toHaveLength(900);
  for (const error of refused) {
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error.data?.code).toBe('TOO_MANY_REQUESTS');
    expect(error.data?.httpStatus).toBe(429);
    expect(error.data?.rateLimit?.retryAfterMs).toBeGreaterThan(0);
  }
  // Every admitted call saw its own remaining count: 99 down to 0, each once.
  const remaining = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.remaining] : []));
  expect(remaining.sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 100 }, (_, i) => i));
});

test('each call counts its own cost: a batch of mutations costing 3 against a limit of 10 runs 3 bodies', async () => {
  const limit = closing(
    rateLimit<Context, Meta>({
      redis,
      prefix: uniquePrefix('trpc'),
      timeoutMs,
      limits: { limit: 10, window: '1m' },
      cost: ({ meta }) => meta?.cost ?? 1,
    }),
  );
  const { router, counts } = makeRouter(limit);
  const { url } = closing(await serveRouter(router));
  const client = clientOf(url);
  const results = await Promise.allSettled(Array.from({ length: 20 }, () => client.spend.mutate()));
  expect(counts.spend).toBe(3);
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
});

test('two servers sharing one limiter: batches sent to both at once still run exactly the limit', async () => {
  const prefix = uniquePrefix('trpc');
  const limiter = closing(createLimiter({ redis, prefix, timeoutMs, limits: { limit: 50, window: '1m' } }));
  const apps = await Promise.all(
    [0, 1].map(async () => {
      const made = makeRouter(rateLimit<Context, Meta>({ limiter }));
      return { counts: made.counts, served: closing(await serveRouter(made.router)) };
    }),
  );
  const clients = apps.map((a) => clientOf(a.served.url));
  await Promise.allSettled(clients.flatMap((c) => Array.from({ length: 200 }, () => c.hit.query())));
  expect(apps[0]!.counts.hit + apps[1]!.counts.hit).toBe(50);
});
