import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/koa';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
  /** Behind a reverse proxy: how many hops of X-Forwarded-For to trust (ctx.ip then takes the entry that many hops in). */
  trustProxy?: number;
}

/**
 * The example API, with @koa/router: every route is under the global limit (20 per 10 s and 500 per hour
 * per client); /search adds its own stricter one; /login adds one per account, so guessing one user's
 * password from many IPs is limited too.
 */
export function createApp({ redis, prefix = 'floodgate-example', trustProxy }: AppOptions = {}): Koa {
  const app = new Koa({ proxy: trustProxy !== undefined, maxIpsCount: trustProxy ?? 0 });
  const router = new Router();
  app.use(bodyParser());
  app.use(
    rateLimit({
      redis,
      prefix,
      name: 'api',
      // Plans: the first applies to every client; `npx floodgate override set key:team-7 --plan pro` moves one
      // identifier to another, on the running app (overrides: true reads them; docs/overrides.md).
      limits: {
        free: [
          { limit: 20, window: '10s' },
          { limit: 500, window: '1h' },
        ],
        pro: [
          { limit: 200, window: '10s' },
          { limit: 5000, window: '1h' },
        ],
      },
      overrides: true,
    }),
  );

  router.get('/', (ctx) => {
    ctx.body = { hello: 'world', remaining: ctx.state.rateLimit?.remaining };
  });
  // A route limit ADDS to the global one.
  router.get('/search', rateLimit({ redis, prefix, name: 'search', limits: { limit: 3, window: '10s' } }), (ctx) => {
    ctx.body = { query: typeof ctx.query.q === 'string' ? ctx.query.q : '', results: [] };
  });
  const login = rateLimit({
    redis,
    prefix,
    name: 'login',
    limits: { limit: 5, window: '15m' },
    message: 'Too many login attempts for this account; try again later',
    // Per account (the body's username); requests without one share the client's IP budget.
    identify: (ctx, defaults) => {
      const username: unknown = (ctx.request.body as { username?: unknown } | undefined)?.username;
      return typeof username === 'string' && username !== '' ? `account:${username.toLowerCase()}` : defaults;
    },
  });
  router.post('/login', login, (ctx) => {
    ctx.status = 401;
    ctx.body = { error: 'invalid credentials (this is a demo)' };
  });
  app.use(router.routes()).use(router.allowedMethods());
  return app;
}
