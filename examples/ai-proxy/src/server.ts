// `npm start`: the proxy on PORT (3000), counting in the Redis at REDIS_URL (redis://127.0.0.1:6379), in front
// of UPSTREAM_URL, or of the fake upstream of src/upstream.ts started on UPSTREAM_PORT (4000) when it is unset.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createProxy } from './proxy';
import { createUpstream } from './upstream';

const {
  PORT = '3000',
  REDIS_URL = 'redis://127.0.0.1:6379',
  UPSTREAM_URL,
  UPSTREAM_PORT = '4000',
  PREFIX,
  API_KEYS = 'team-7,team-8',
} = process.env;

const listen = (server: Server, port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} is in use; set PORT or UPSTREAM_PORT to another one`) : err),
    );
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });

async function main(): Promise<void> {
  const upstream = UPSTREAM_URL === undefined ? createUpstream() : undefined;
  const upstreamUrl = UPSTREAM_URL ?? `http://127.0.0.1:${await listen(upstream!, Number(UPSTREAM_PORT))}`;
  const redis = new Redis(REDIS_URL);
  const proxy = createServer(createProxy({ redis, apiKeys: API_KEYS.split(','), upstreamUrl, prefix: PREFIX }));
  const port = await listen(proxy, Number(PORT));
  console.log(`Floodgate AI proxy example on http://localhost:${port} (upstream ${upstreamUrl}${upstream ? ', the fake one' : ''})`);

  // Ctrl-C or SIGTERM: stop listening, drop connections, close Redis, exit 0.
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    proxy.close(() => {
      upstream?.close();
      redis.disconnect();
      process.exit(0);
    });
    proxy.closeAllConnections();
    upstream?.closeAllConnections();
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
