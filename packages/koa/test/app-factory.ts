import Koa from 'koa';
import Router from '@koa/router';
import { serveHttp, type AdapterFactory, type RoutePath } from '@floodgate/testing';
import { rateLimit } from '@floodgate/koa';

/**
 * The suite's app in Koa: app.proxy with maxIpsCount 1 stands in for one reverse proxy on this host. No
 * body parser: no route of the suite reads a body.
 */
export const koaFactory: AdapterFactory = {
  name: 'koa',
  async makeApp(spec) {
    const app = new Koa({ proxy: spec.trustProxy === true, maxIpsCount: 1 });
    const router = new Router();
    let hits = 0;
    app.use(async (ctx, next) => {
      const id = ctx.get('x-user');
      if (id !== '') ctx.state.user = { id };
      await next();
    });
    if (spec.global) app.use(rateLimit(spec.global));
    const routes: [RoutePath, 'get' | 'post'][] = [['/', 'get'], ['/search', 'get'], ['/login', 'post']];
    for (const [path, method] of routes) {
      const own = spec.routes?.[path];
      const handler = (ctx: Koa.Context): void => {
        hits++;
        ctx.body = { ok: true };
      };
      if (own) router[method](path, rateLimit(own), handler);
      else router[method](path, handler);
    }
    app.use(router.routes());
    const served = await serveHttp(app.listen(0, '127.0.0.1'));
    return { ...served, hits: () => hits };
  },
};

