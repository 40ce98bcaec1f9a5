import type { AddressInfo } from 'node:net';
import express from 'express';
import { rateLimit, type RateLimitMiddleware, type RateLimitOptions } from '@floodgate/express';

/**
 * For a test file: `serve(options)` mounts one rateLimit() on GET / of an Express app on loopback, behind a
 * trusted proxy there (X-Forwarded-For from loopback names the client); after each test, the servers and
 * the middlewares' limiters are closed.
 */
export function servedLimits(): (options: RateLimitOptions) => Promise<{ url: string; limit: RateLimitMiddleware }> {
  const servers: ReturnType<express.Express['listen']>[] = [];
  const middlewares: RateLimitMiddleware[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
    await Promise.all(middlewares.splice(0).map((m) => m.close()));
  });
  return async (options) => {
    const limit = rateLimit(options);
    middlewares.push(limit);
    const server = express()
      .set('trust proxy', 'loopback')
      .get('/', limit, (_req, res) => void res.send('ok'))
      .listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, limit };
  };
}
