// `npm start`: the example API on PORT (3000), counting in the Redis at REDIS_URL (redis://127.0.0.1:6379).
// PREFIX=<name> to share one Redis; STORE=memory to try it without Redis.
import type { AddressInfo } from 'node:net';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { Redis } from 'ioredis';
import { rateLimitResponseMeta } from '@floodgate/trpc';
import { createContext, createRouter } from './app';

const { PORT = '3000', REDIS_URL = 'redis://127.0.0.1:6379', STORE, PREFIX } = process.env;
const redis = STORE === 'memory' ? undefined : new Redis(REDIS_URL);
const server = createHTTPServer({
  router: createRouter({ redis, prefix: PREFIX }),
  createContext,
  // The rate-limit headers of each response (a batch's: its most restrictive call).
  responseMeta: rateLimitResponseMeta,
});

server.on('error', (err: NodeJS.ErrnoException) => {
  const port = Number(PORT);
  console.error(
    err.code === 'EADDRINUSE' ? `port ${port} is in use; set PORT=... to use another one (PORT=${port + 1} npm start)` : err.message,
  );
  process.exit(1);
});
server.listen(Number(PORT), () => {
  const store = redis ? `Redis at ${REDIS_URL}` : 'in-memory, this process only';
  console.log(`Floodgate tRPC example on http://localhost:${(server.address() as AddressInfo).port} (store: ${store})`);
});

// Ctrl-C or SIGTERM: stop listening, drop idle connections, close Redis, exit 0. Further signals while
// stopping are ignored (Ctrl-C can reach this process twice: from the terminal and from a parent passing it on).
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  server.close(() => {
    redis?.disconnect();
    process.exit(0);
  });
  server.closeAllConnections();
};
process.on('SIGINT', stop).on('SIGTERM', stop);
