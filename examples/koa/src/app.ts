import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/koa';
import { API_LIMIT, LOGIN_LIMIT, SEARCH_LIMIT, loginIdentifiers, replies, trustedHops } from '@floodgate/embedded-redis';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
}

/** The example API (see example-api.ts in @floodgate/embedded-redis) in Koa with @koa/router. */
export function createApp({ redis, prefix = 'floodgate-example' }: AppOptions = {}): Koa {
  // Behind a reverse proxy, TRUST_PROXY=<hops>: ctx.ip then takes the entry that many hops in.
  const hops = trustedHops();
  const app = new Koa({ proxy: hops !== undefined, maxIpsCount: hops ?? 0 });
  const router = new Router();
  app.use(bodyParser());
  app.use(rateLimit({ redis, prefix, ...API_LIMIT }));

  router.get('/', (ctx) => {
    ctx.body = replies.home(ctx.state.rateLimit?.remaining);
  });
  // A route limit ADDS to the global one.
  router.get('/search', rateLimit({ redis, prefix, ...SEARCH_LIMIT }), (ctx) => {
    ctx.body = replies.search(ctx.query.q);
  });
  const loginLimit = rateLimit({
    redis,
    prefix,
    ...LOGIN_LIMIT,
    identify: (ctx, defaults) => loginIdentifiers(ctx.request.body, defaults),
  });
  router.post('/login', loginLimit, (ctx) => {
    ctx.status = replies.login.status;
    ctx.body = replies.login.body;
  });
  app.use(router.routes()).use(router.allowedMethods());
  return app;
}
