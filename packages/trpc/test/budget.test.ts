import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { createTRPCClient, httpBatchLink, httpLink } from '@trpc/client';
import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, rateLimitContext, rateLimitErrorFormatter, type ProcedureCall } from '@floodgate/trpc';

/*
 * Budgets over tRPC (docs/trpc.md, "Budgets"): a metered procedure is reserved at its estimate when its call
 * is admitted and settled at what it used once it returned, read off the procedure's result. Over a real
 * standalone server and the real client; what the procedure "used" is the `used` of its input, as a model's
 * usage would be what its upstream reported.
 */

const redis = connect();
const closing = closeAfterEach();
const timeoutMs = 10_000; // the deadline is not the subject

interface Context {
  clientAddress: string | undefined;
}
const t = initTRPC.context<Context>().create({ errorFormatter: rateLimitErrorFormatter });
type Result = { ok: true; data: { used: number } } | { ok: false };

async function serve(estimate: number) {
  const limit = closing(
    rateLimit<Context>({
      redis,
      timeoutMs,
      prefix: uniquePrefix('trpc-budget'),
      limits: [
        { limit: 1000, window: '1m' },
        { limit: 1000, window: '1m', unit: 'tokens' },
      ],
      cost: () => ({ requests: 1, tokens: estimate }),
      // What the procedure answered: its usage when it returned one, else the estimate (work may have been done).
      settle: (_call: ProcedureCall<Context>, result?: unknown) => {
        const r = result as Result | undefined;
        return { requests: 1, tokens: r?.ok ? r.data.used : estimate };
      },
    }),
  );
  let bodies = 0;
  const router = t.router({
    complete: t.procedure
      .use(limit)
      .input((raw) => raw as { used: number; fail?: boolean })
      .mutation(({ input }) => {
        bodies++;
        if (input.fail) throw new Error('upstream failed');
        return { used: input.used };
      }),
  });
  const server = createHTTPServer({ router, createContext: ({ req }) => rateLimitContext(req) });
  const served = closing(await serveHttp(server.listen(0, '127.0.0.1')));
  const one = createTRPCClient<typeof router>({ links: [httpLink({ url: served.url })] });
  const batched = createTRPCClient<typeof router>({ links: [httpBatchLink({ url: served.url, maxItems: 1000 })] });
  /** Calls one after the other until one is refused: how many were admitted. */
  const untilRefused = async (used: number, most = 50): Promise<number> => {
    for (let n = 0; n < most; n++) {
      try {
        await one.complete.mutate({ used });
      } catch {
        return n;
      }
      await settled();
    }
    return most;
  };
  return { one, batched, untilRefused, bodies: () => bodies };
}

test('a call is settled at what its procedure used, read off its result: 400 used of a 100 estimate leaves 600 of 1,000', async () => {
  const { one, untilRefused } = await serve(100);
  await one.complete.mutate({ used: 400 });
  await settled();
  // Each next call reserves 100 and uses 100: 6 fit in the 600 left (without the settle, 9 would).
  expect(await untilRefused(100)).toBe(6);
});

test('a call that used less gives the difference back: 10 calls using 0 of a 100 estimate leave the budget whole', async () => {
  const { one, untilRefused } = await serve(100);
  for (let i = 0; i < 10; i++) {
    await one.complete.mutate({ used: 0 });
    await settled();
  }
  expect(await untilRefused(100)).toBe(10);
});

test('a batch of 30 calls, each estimated at 100 against 1,000 tokens, admits exactly 10 together: the estimates bound what runs at once', async () => {
  const { batched, bodies } = await serve(100);
  const results = await Promise.allSettled(Array.from({ length: 30 }, () => batched.complete.mutate({ used: 100 })));
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
  expect(bodies()).toBe(10);
});

test('a procedure that throws is settled by settle too: here at its estimate', async () => {
  const { one, untilRefused } = await serve(100);
  await expect(one.complete.mutate({ used: 0, fail: true })).rejects.toThrow('upstream failed');
  await settled();
  expect(await untilRefused(100)).toBe(9);
});
