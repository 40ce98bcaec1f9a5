import { pipeline } from 'node:stream';
import express, { type Request } from 'express';
import express4 from 'express4';
import { answerOf, beforeAnswer, serveHttp, sseReadable, type AdapterFactory, type RoutePath } from '@floodgate/testing';
import { concurrency, rateLimit, slowDown } from '@floodgate/express';

/**
 * The suite's app in Express, built with `framework` (Express 5, or Express 4 through its `express4` alias):
 * trust proxy 'loopback' stands in for a reverse proxy on this host.
 */
function expressAppFactory(name: string, framework: typeof express): AdapterFactory {
  return {
    name,
    async makeApp(spec) {
      const app = framework();
      let hits = 0;
      if (spec.trustProxy) app.set('trust proxy', 'loopback');
      app.use(framework.json());
      app.use((req, _res, next) => {
        const id = req.headers['x-user'];
        if (typeof id === 'string') (req as Request & { user?: { id: string } }).user = { id };
        next();
      });
      if (spec.concurrency) app.use(concurrency(spec.concurrency));
      const global = spec.global && rateLimit(spec.global);
      if (global && spec.rateLimitFirst) app.use(global);
      if (spec.slowDown) app.use(slowDown(spec.slowDown));
      if (global && !spec.rateLimitFirst) app.use(global);
      app.get('/slow', (_req, res) => {
        hits++;
        void (spec.slow?.() ?? Promise.resolve()).then(() => res.json({ ok: true }));
      });
      app.get('/stream', (req, res) => {
        hits++;
        res.setHeader('Content-Type', 'text/event-stream');
        pipeline(sseReadable(req.headers, spec.stream), res, () => undefined);
      });
      const routes: [RoutePath, 'get' | 'post'][] = [
        ['/', 'get'],
        ['/search', 'get'],
        ['/login', 'post'],
      ];
      for (const [path, method] of routes) {
        const own = spec.routes?.[path];
        const handler = (req: Request, res: express.Response): void => {
          hits++;
          const { status } = answerOf(req.headers);
          void beforeAnswer(req.headers, spec).then(() => res.status(status).json({ ok: status < 400 }));
        };
        if (own) app[method](path, rateLimit(own), handler);
        else app[method](path, handler);
      }
      const served = await serveHttp(spec.socketPath ? app.listen(spec.socketPath) : app.listen(0, '127.0.0.1'));
      return { ...served, hits: () => hits };
    },
  };
}

export const expressFactory = expressAppFactory('express', express);
export const express4Factory = expressAppFactory('express4', express4);
