import Koa from 'koa';
import koaRateLimit from 'koa-ratelimit';
import { rateLimit as floodgate } from '@floodgate/koa';
import { serve, type AppFactory, type Listen } from './apps';
import { clientOf, floodgateLimits } from './shapes';

/* Koa 3: no limiter; Floodgate (@floodgate/koa); koa-ratelimit with its Redis (ioredis) driver, stacked for several rules. */

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
  floodgate: (shape, redis) =>
    app([
      floodgate({
        redis,
        name: `bench-${shape.name}`,
        limits: floodgateLimits(shape),
        identify: (ctx) => shape.identifiers(clientOf(ctx.headers)),
      }),
    ]),
  'koa-ratelimit': (shape, redis) =>
    app(
      shape.peers.map((r, i) =>
        koaRateLimit({
          driver: 'redis',
          db: redis,
          namespace: `krl${i}`,
          duration: r.windowMs,
          max: r.limit,
          id: (ctx) => clientOf(ctx.headers),
        }),
      ),
    ),
};
