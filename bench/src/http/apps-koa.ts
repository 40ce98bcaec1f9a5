import Koa from 'koa';
import koaRateLimit from 'koa-ratelimit';
import * as floodgateKoa from '@floodgate/koa';
import { HAND_429, adapter, floodgateOptions, serve, type AppFactory, type Listen } from './apps';
import { clientOf } from './shapes';

/* Koa 3: no limiter; Floodgate (@floodgate/koa); koa-ratelimit with its Redis (ioredis) driver, stacked for several rules. */

function app(middleware: Koa.Middleware[]): Listen {
  const a = new Koa();
  for (const m of middleware) a.use(m);
  a.use((ctx) => {
    ctx.body = 'ok';
  });
  return serve(a.callback());
}

const floodgate: AppFactory = (shape, redis, variant) =>
  app([
    adapter(variant, '@floodgate/koa', floodgateKoa).rateLimit(floodgateOptions<Koa.Context>(shape, redis, variant, (ctx) => ctx.headers)),
  ]);

export const koaApps: Record<string, AppFactory> = {
  baseline: () => app([]),
  floodgate,
  'floodgate+autopipeline': floodgate,
  'koa-ratelimit': (shape, redis) =>
    app(
      shape.peers.map((r, i) =>
        koaRateLimit({
          driver: 'redis',
          db: redis,
          namespace: `krl${i}`,
          duration: r.windowMs,
          max: r.limit,
          id: (ctx) => r.id(clientOf(ctx.headers)),
        }),
      ),
    ),
  '429': () =>
    app([
      (ctx) => {
        ctx.set(HAND_429.headers);
        ctx.status = 429;
        ctx.body = HAND_429.body;
      },
    ]),
};
