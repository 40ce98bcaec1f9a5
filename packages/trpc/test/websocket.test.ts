import { createServer } from 'node:http';
import { WebSocket, WebSocketServer } from 'ws';
import { applyWSSHandler } from '@trpc/server/adapters/ws';
import { createTRPCClient, createWSClient, wsLink, TRPCClientError } from '@trpc/client';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, rateLimitContext } from '@floodgate/trpc';
import { makeRouter, type AppRouter, type Context, type Meta } from './app';

/*
 * Subscriptions over WebSockets (tRPC's ws adapter and the client's wsLink): the context is made once per
 * connection, from the upgrade request, and each subscription start is a call the middleware checks.
 */

const redis = connect();
const closing = closeAfterEach();

test('over WebSockets each subscription start is a check: the third start of a limit of 2 is TOO_MANY_REQUESTS, from the upgrade request’s address', async () => {
  const seen: string[][] = [];
  const limit = closing(
    rateLimit<Context, Meta>({
      redis,
      timeoutMs: 10_000,
      prefix: uniquePrefix('trpc'),
      limits: { limit: 2, window: '1m' },
      identify: (_call, defaults) => (seen.push(defaults), defaults),
    }),
  );
  const { router, counts } = makeRouter(limit);
  const server = createServer();
  const wss = new WebSocketServer({ server });
  const handler = applyWSSHandler({ wss, router, createContext: ({ req }) => rateLimitContext(req) });
  const { url } = closing(await serveHttp(server.listen(0, '127.0.0.1')));
  closing({ close: async () => (handler.broadcastReconnectNotification(), wss.close()) });
  const ws = createWSClient({ url: url.replace('http', 'ws'), WebSocket: WebSocket as never });
  closing({ close: () => ws.close() });
  const client = createTRPCClient<AppRouter>({ links: [wsLink({ client: ws })] });
  const run = () =>
    new Promise<number[] | TRPCClientError<AppRouter>>((resolve) => {
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
          resolve(error as TRPCClientError<AppRouter>);
        },
      });
    });
  expect(await run()).toEqual([0, 1, 2]);
  expect(await run()).toEqual([0, 1, 2]);
  const refused = await run();
  expect(refused).toBeInstanceOf(TRPCClientError);
  expect((refused as TRPCClientError<AppRouter>).data?.code).toBe('TOO_MANY_REQUESTS');
  expect(counts.ticks).toBe(2);
  expect(seen.map(([ip]) => ip)).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1', 'ip:127.0.0.1']);
});
