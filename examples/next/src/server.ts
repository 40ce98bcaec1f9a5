// `npm start`: the example API on PORT (3000), counting in the Redis at REDIS_URL (redis://127.0.0.1:6379).
// TRUST_PROXY=<hops, or addresses and ranges, comma-separated> behind a reverse proxy; PREFIX=<name> to share
// one Redis; STORE=memory to try it without Redis. The app (app/, proxy.js) reads the same variables.
// The peer stamp first, before Next: every request's client address is known from the first one on.
import '@floodgate/next/register';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import next from 'next';

const { PORT = '3000', REDIS_URL = 'redis://127.0.0.1:6379', STORE } = process.env;
const app = next({ dev: false, dir: join(__dirname, '..') });

void app.prepare().then(() => {
  const handle = app.getRequestHandler();
  const server = createServer((req, res) => void handle(req, res));
  server.on('error', (err: NodeJS.ErrnoException) => {
    const port = Number(PORT);
    console.error(
      err.code === 'EADDRINUSE' ? `port ${port} is in use; set PORT=... to use another one (PORT=${port + 1} npm start)` : err.message,
    );
    process.exit(1);
  });
  server.listen(Number(PORT), () => {
    const store = STORE === 'memory' ? 'in-memory, this process only' : `Redis at ${REDIS_URL}`;
    console.log(`Floodgate Next example on http://localhost:${(server.address() as AddressInfo).port} (store: ${store})`);
  });
  // Ctrl-C or SIGTERM: stop listening, drop idle connections, exit 0 (once).
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
});
