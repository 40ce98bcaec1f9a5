import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { getRequestListener } from '@hono/node-server';
import * as floodgateHono from '@floodgate/hono';
import { HAND_429, adapter, floodgateOptions, serve, type AppFactory, type Listen } from './apps';
import { HEADER } from './shapes';

/* Hono 4 on @hono/node-server: no limiter; Floodgate (@floodgate/hono). */

function app(middleware: MiddlewareHandler[]): Listen {
  const a = new Hono();
  for (const m of middleware) a.use(m);
  a.get('/', (c) => c.text('ok'));
  return serve(getRequestListener(a.fetch));
}

const floodgate: AppFactory = (shape, redis, variant) =>
  app([
    adapter(variant, '@floodgate/hono', floodgateHono).rateLimit(
      floodgateOptions<Context>(shape, redis, variant, (c) => ({ [HEADER]: c.req.header(HEADER) })),
    ),
  ]);

export const honoApps: Record<string, AppFactory> = {
  baseline: () => app([]),
  floodgate,
  'floodgate+autopipeline': floodgate,
  '429': () => app([(c) => Promise.resolve(c.json(HAND_429.body, 429, HAND_429.headers))]),
};
