import Koa from 'koa';
import Koa2 from 'koa2';
import Router from '@koa/router';
import { answerOf, beforeAnswer, serveHttp, sseReadable, type AdapterFactory, type RoutePath } from '@floodgate/testing';
import { concurrency, rateLimit, slowDown } from '@floodgate/koa';

/**
 * The suite's app in Koa, built with `framework` (Koa 3, or Koa 2 through its `koa2` alias): app.proxy with
 * maxIpsCount 1 stands in for one reverse proxy on this host. No body parser: no route of the suite reads a body.
 */
function koaAppFactory(name: string, framework: typeof Koa): AdapterFactory {
  return {
    name,
    async makeApp(spec) {
      const app = new framework({ proxy: spec.trustProxy === true, maxIpsCount: 1 });
      // The suite provokes errors on purpose (reset connections, throwing option functions) and asserts the
      // statuses they produce; Koa would print each one.
      app.silent = true;
      const router = new Router();
      let hits = 0;
      app.use(async (ctx, next) => {
        const id = ctx.get('x-user');
        if (id !== '') ctx.state.user = { id };
        await next();
      });
      if (spec.concurrency) app.use(concurrency(spec.concurrency));
      const global = spec.global && rateLimit(spec.global);
      if (global && spec.rateLimitFirst) app.use(global);
      if (spec.slowDown) app.use(slowDown(spec.slowDown));
      if (global && !spec.rateLimitFirst) app.use(global);
      router.get('/slow', async (ctx) => {
        hits++;
        await spec.slow?.();
        ctx.body = { ok: true };
      });
      router.get('/stream', (ctx) => {
        hits++;
        ctx.type = 'text/event-stream';
        ctx.body = sseReadable(ctx.headers, spec.stream);
      });
      const routes: [RoutePath, 'get' | 'post'][] = [
        ['/', 'get'],
        ['/search', 'get'],
        ['/login', 'post'],
      ];
      for (const [path, method] of routes) {
        const own = spec.routes?.[path];
        const handler = async (ctx: Koa.Context): Promise<void> => {
          hits++;
          const { status } = answerOf(ctx.headers);
          await beforeAnswer(ctx.headers, spec);
          ctx.status = status;
          ctx.body = { ok: status < 400 };
        };
        if (own) router[method](path, rateLimit(own), handler);
        else router[method](path, handler);
      }
      app.use(router.routes());
      const served = await serveHttp(spec.socketPath ? app.listen(spec.socketPath) : app.listen(0, '127.0.0.1'));
      return { ...served, hits: () => hits };
    },
  };
}

export const koaFactory = koaAppFactory('koa', Koa);
export const koa2Factory = koaAppFactory('koa2', Koa2);
