import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { getRequestListener } from '@hono/node-server';
import { RedisStore, rateLimiter } from 'hono-rate-limiter';
import type Redis from 'ioredis';
import * as floodgateHono from '@floodgate/hono';
import { HAND_429, adapter, floodgateOptions, rlfSettle, serve, type AppFactory, type Listen } from './apps';
import { HEADER, clientOf } from './shapes';

/*
 * Hono 4 on @hono/node-server: no limiter; Floodgate (@floodgate/hono); hono-rate-limiter with its
 * RedisStore on the bench's ioredis client, stacked for several rules; rate-limiter-flexible in the settle
 * shape only.
 */

function app(middleware: MiddlewareHandler[]): Listen {
  const a = new Hono();
  for (const m of middleware) a.use(m);
  a.get('/', (c) => c.text('ok'));
  return serve(getRequestListener(a.fetch));
}

/** The header bag the shapes read the client id from. */
const headers = (c: Context): Record<string, string | undefined> => ({ [HEADER]: c.req.header(HEADER) });

/** hono-rate-limiter's RedisStore client (scriptLoad, evalsha, decr, del) over an ioredis client. */
function storeClient(redis: Redis): ConstructorParameters<typeof RedisStore>[0]['client'] {
  return {
    scriptLoad: (script) => redis.script('LOAD', script) as Promise<string>,
    evalsha: <TArgs extends unknown[], TData = unknown>(sha1: string, keys: string[], args: TArgs) =>
      redis.evalsha(sha1, keys.length, ...keys, ...(args as (string | number)[])) as Promise<TData>,
    decr: (key) => redis.decr(key),
    del: (key) => redis.del(key),
  };
}

const floodgate: AppFactory = (shape, redis, variant) =>
  app([adapter(variant, '@floodgate/hono', floodgateHono).rateLimit(floodgateOptions<Context>(shape, redis, variant, headers))]);

export const honoApps: Record<string, AppFactory> = {
  baseline: () => app([]),
  floodgate,
  'floodgate+autopipeline': floodgate,
  // One middleware per rule, each with its own store and key prefix (it takes draft-6 or draft-7 headers).
  'hono-rate-limiter': (shape, redis) => {
    const client = storeClient(redis);
    return app(
      shape.peers.map((r, i) =>
        rateLimiter({
          windowMs: r.windowMs,
          limit: r.limit,
          standardHeaders: 'draft-7',
          keyGenerator: (c) => r.id(clientOf(headers(c))),
          store: new RedisStore({ client, prefix: `hrl${i}:` }),
        }),
      ),
    );
  },
  // The settle shape: consumed before `await next()`, rewarded after it.
  'rate-limiter-flexible': (shape, redis) => {
    const peer = rlfSettle(shape, redis);
    return app([
      async (c, next) => {
        const id = clientOf(headers(c));
        try {
          await peer.consume(id);
        } catch (rej) {
          if (rej instanceof Error) throw rej;
          return c.text('Too Many Requests', 429);
        }
        await next();
        peer.settle(id);
      },
    ]);
  },
  '429': () => app([(c) => Promise.resolve(c.json(HAND_429.body, 429, HAND_429.headers))]),
};
