import Koa from 'koa';
import koaRateLimit from 'koa-ratelimit';
import { createHttpLimiter } from '@floodgate/core';
import { serve, type AppFactory, type Listen } from './apps';
import { clientOf, floodgateLimits } from './shapes';

/*
 * Koa 3: no limiter; Floodgate; koa-ratelimit with its Redis (ioredis) driver, stacked for several rules.
 * Until @floodgate/koa is merged, Floodgate here is INTERIM: core's createHttpLimiter in a 12-line middleware.
 */
export const KOA_FLOODGATE_INTERIM = true;

function app(middleware: Koa.Middleware[]): Listen {
  const a = new Koa();
  for (const m of middleware) a.use(m);
  a.use((ctx) => {
    ctx.body = 'ok';
  });
  return serve(a.callback());
}

export const koaApps: Record<string, AppFactory> = {
  baseline: () => app([]),
  floodgate: (shape, redis) => {
    const http = createHttpLimiter<Koa.Context>({ redis, name: `bench-${shape.name}`, limits: floodgateLimits(shape), identify: (ctx) => shape.identifiers(clientOf(ctx.headers)) });
    return app([async (ctx, next) => {
      const outcome = await http.run(ctx, ctx.ip);
      if (outcome.action === 'error') throw outcome.error;
      for (const [name, value] of outcome.set) ctx.set(name, value);
      for (const [name, value] of outcome.append) ctx.append(name, value);
      if (outcome.action === 'next') return next();
      ctx.status = outcome.status;
      ctx.body = outcome.body;
    }]);
  },
  'koa-ratelimit': (shape, redis) =>
    app(shape.peers.map((r, i) => koaRateLimit({ driver: 'redis', db: redis, namespace: `krl${i}`, duration: r.windowMs, max: r.limit, id: (ctx) => clientOf(ctx.headers) }))),
};
