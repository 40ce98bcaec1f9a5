import Koa from 'koa';
import koaRateLimit from 'koa-ratelimit';
import * as floodgateKoa from '@floodgate/koa';
import { HAND_429, adapter, floodgateOptions, rlfSettle, serve, type AppFactory, type Listen } from './apps';
import { clientOf } from './shapes';

/*
 * Koa 3: no limiter; Floodgate (@floodgate/koa); koa-ratelimit with its Redis (ioredis) driver, stacked for
 * several rules; rate-limiter-flexible in the settle shape only.
 */

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
  // The settle shape: consumed before `await next()`, rewarded after it.
  'rate-limiter-flexible': (shape, redis) => {
    const peer = rlfSettle(shape, redis);
    return app([
      async (ctx, next) => {
        const c = clientOf(ctx.headers);
        try {
          await peer.consume(c);
        } catch (rej) {
          if (rej instanceof Error) throw rej;
          ctx.status = 429;
          ctx.body = 'Too Many Requests';
          return;
        }
        await next();
        peer.settle(c);
      },
    ]);
  },
  '429': () =>
    app([
      (ctx) => {
        ctx.set(HAND_429.headers);
        ctx.status = 429;
        ctx.body = HAND_429.body;
      },
    ]),
};
