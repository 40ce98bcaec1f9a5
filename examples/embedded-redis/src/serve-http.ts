import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Served {
  url: string;
  /** Set when the server listens on a unix socket (then `url` is `http://localhost`). */
  socketPath?: string;
  close(): Promise<void>;
}

/** Waits for an Express or Koa `app.listen(...)` server to listen; close() also drops keep-alive sockets. */
export async function serveHttp(server: Server): Promise<Served> {
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const bound = server.address() as AddressInfo | string;
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  if (typeof bound === 'string') return { url: 'http://localhost', socketPath: bound, close };
  const { address, port } = bound;
  const host = address === '::' || address === '0.0.0.0' ? 'localhost' : address;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
