// `npm start`: the example API on PORT (3000), counting in the Redis at REDIS_URL (redis://127.0.0.1:6379).
// TRUST_PROXY=<addresses or ranges, comma-separated> behind a reverse proxy; PREFIX=<name> to share one Redis;
// STORE=memory to try it without Redis.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Redis } from 'ioredis';
import { createApp } from './app';

const { PORT = '3000', REDIS_URL = 'redis://127.0.0.1:6379', STORE, TRUST_PROXY, PREFIX } = process.env;
const redis = STORE === 'memory' ? undefined : new Redis(REDIS_URL);
const trustProxy = TRUST_PROXY ? TRUST_PROXY.split(',').map((entry) => entry.trim()) : undefined;
const app = createApp({ redis, prefix: PREFIX, trustProxy });
const server = createAdaptorServer({ fetch: app.fetch }) as Server;

server.on('error', (err: NodeJS.ErrnoException) => {
  const port = Number(PORT);
  console.error(
    err.code === 'EADDRINUSE' ? `port ${port} is in use; set PORT=... to use another one (PORT=${port + 1} npm start)` : err.message,
  );
  process.exit(1);
});
server.listen(Number(PORT), () => {
  const store = redis ? `Redis at ${REDIS_URL}` : 'in-memory, this process only';
  console.log(`Floodgate Hono example on http://localhost:${(server.address() as AddressInfo).port} (store: ${store})`);
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
