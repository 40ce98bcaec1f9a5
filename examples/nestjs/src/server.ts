// `npm start`: the example API on PORT (3000), counting in the Redis at REDIS_URL (redis://127.0.0.1:6379).
// TRUST_PROXY=<hops> behind a reverse proxy; PREFIX=<name> to share one Redis; STORE=memory to try it without Redis.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createApp } from './app';

const { PORT = '3000', REDIS_URL = 'redis://127.0.0.1:6379', STORE, TRUST_PROXY, PREFIX } = process.env;
const redis = STORE === 'memory' ? undefined : new Redis(REDIS_URL);
const ready = createApp({ redis, prefix: PREFIX, trustProxy: TRUST_PROXY ? Number(TRUST_PROXY) : undefined });

ready
  .then(async (app) => {
    // Listening on Nest's HTTP server directly: a busy port is then this program's one-line message below,
    // not a logged stack as well.
    await app.init();
    const server = app.getHttpServer() as Server;
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(Number(PORT), '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  })
  .then(
    (url) => {
      const store = redis ? `Redis at ${REDIS_URL}` : 'in-memory, this process only';
      console.log(`Floodgate NestJS example on ${url.replace('127.0.0.1', 'localhost')} (store: ${store})`);
    },
    (err: NodeJS.ErrnoException) => {
      const port = Number(PORT);
      console.error(
        err.code === 'EADDRINUSE' ? `port ${port} is in use; set PORT=... to use another one (PORT=${port + 1} npm start)` : String(err),
      );
      process.exit(1);
    },
  );

// Ctrl-C or SIGTERM: stop listening and drop open connections first (a keep-alive client is not served
// while the app shuts down), then close the app (its limiters), close Redis, exit 0. Further signals while
// stopping are ignored (Ctrl-C can reach this process twice: from the terminal and from a parent passing it on).
let stopping: Promise<void> | undefined;
const stop = (): void => {
  stopping ??= ready
    .then((app) => {
      const server = app.getHttpServer() as Server;
      server.close();
      server.closeAllConnections();
      return app.close();
    })
    .then(() => {
      redis?.disconnect();
      process.exit(0);
    });
};
process.on('SIGINT', stop).on('SIGTERM', stop);
