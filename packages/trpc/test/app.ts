import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { initTRPC } from '@trpc/server';
import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { EventSource } from 'eventsource';
import { serveHttp } from '@floodgate/testing';
import { rateLimitContext, rateLimitErrorFormatter, rateLimitResponseMeta, type RateLimitMiddleware } from '@floodgate/trpc';

/*
 * A real tRPC server on the standalone adapter over a loopback port, and the real client. The router's
 * procedures count their bodies, so a test reads how many calls ran past the middleware.
 */

export interface Context {
  clientAddress: string | undefined;
  user?: { id: string };
}
export interface Meta {
  cost?: number;
}

const t = initTRPC.context<Context>().meta<Meta>().create({ errorFormatter: rateLimitErrorFormatter });

/** The router every test serves: `hit` (query), `spend` (mutation, cost from meta), `ticks` (a subscription of `n` events). */
export function makeRouter(limit: RateLimitMiddleware<Context, Meta>) {
  const counts = { hit: 0, spend: 0, ticks: 0, open: 0 };
  const limited = t.procedure.use(limit);
  const router = t.router({
    hit: limited.query(({ ctx }) => {
      counts.hit++;
      return { remaining: ctx.rateLimit?.remaining ?? null };
    }),
    spend: limited.meta({ cost: 3 }).mutation(() => {
      counts.spend++;
      return 'spent';
    }),
    ticks: limited.subscription(async function* () {
      counts.ticks++;
      for (let i = 0; i < 3; i++) yield i;
    }),
    open: t.procedure.query(() => {
      counts.open++;
      return 'open';
    }),
  });
  return { router, counts };
}
export type AppRouter = ReturnType<typeof makeRouter>['router'];

/** Serves the router on @trpc/server/adapters/standalone; `user` from the x-user header. */
export async function serveRouter(router: AppRouter, options: { maxBatchSize?: number } = {}) {
  const server = createHTTPServer({
    router,
    createContext: ({ req }) => {
      const id = req.headers['x-user'];
      return { ...rateLimitContext(req), ...(typeof id === 'string' ? { user: { id } } : {}) };
    },
    responseMeta: rateLimitResponseMeta,
    maxBatchSize: options.maxBatchSize,
  });
  let requests = 0;
  server.on('request', () => requests++);
  return { ...(await serveHttp(server.listen(0, '127.0.0.1'))), requests: () => requests };
}

/** The real client: httpBatchLink (or httpLink, one request per call), subscriptions over SSE (Node 20 has no EventSource of its own). */
export function clientOf(url: string, options: { batch?: boolean; headers?: Record<string, string>; maxItems?: number } = {}) {
  const headers = options.headers ?? {};
  const link = options.batch === false ? httpLink({ url, headers }) : httpBatchLink({ url, headers, maxItems: options.maxItems });
  return createTRPCClient<AppRouter>({
    links: [splitLink({ condition: (op) => op.type === 'subscription', true: httpSubscriptionLink({ url, EventSource }), false: link })],
  });
}
