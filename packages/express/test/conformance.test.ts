import type { AddressInfo } from 'node:net';
import express, { type Request } from 'express';
import { conformance, type AdapterFactory, type RoutePath } from '@floodgate/testing';
import { rateLimit } from '@floodgate/express';

/** The suite's app in Express: trust proxy 'loopback' stands in for a reverse proxy on this host. */
export const expressFactory: AdapterFactory = {
  name: 'express',
  async makeApp(spec) {
    const app = express();
    let hits = 0;
    if (spec.trustProxy) app.set('trust proxy', 'loopback');
    app.use(express.json());
    app.use((req, _res, next) => {
      const id = req.headers['x-user'];
      if (typeof id === 'string') (req as Request & { user?: { id: string } }).user = { id };
      next();
    });
    if (spec.global) app.use(rateLimit(spec.global));
    const routes: [RoutePath, 'get' | 'post'][] = [['/', 'get'], ['/search', 'get'], ['/login', 'post']];
    for (const [path, method] of routes) {
      const own = spec.routes?.[path];
      const handler = (_req: Request, res: express.Response): void => {
        hits++;
        res.json({ ok: true });
      };
      if (own) app[method](path, rateLimit(own), handler);
      else app[method](path, handler);
    }
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      hits: () => hits,
      close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
    };
  },
};

conformance(expressFactory);
