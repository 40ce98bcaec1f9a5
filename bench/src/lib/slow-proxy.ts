import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './machine';

/*
 * A Redis that answers slowly: a TCP proxy on loopback that holds every chunk of Redis's replies for
 * `delayMs` before passing it on (requests go through at once). Replies keep their order: chunks of one
 * connection leave in the order they came, each `delayMs` after it arrived. The latency phase points a
 * server's Redis client at it to show what a slow store adds and what the deadline (`timeoutMs`) caps.
 */
export interface SlowProxy {
  url: string;
  close(): Promise<void>;
}

export async function startSlowProxy(redisPort: number, delayMs: number): Promise<SlowProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: redisPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      setTimeout(() => {
        if (!client.destroyed) client.write(chunk);
      }, delayMs);
    });
    client.on('end', () => upstream.end());
    upstream.on('end', () => setTimeout(() => client.end(), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
