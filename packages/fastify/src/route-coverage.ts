import { subscribe } from 'node:diagnostics_channel';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Logger } from '@floodgate/core/adapter';
import { enclosing, withinScope } from './internals';

/*
 * Routes the plugin never saw (docs/fastify.md, "Register it before the routes"). The plugin attaches itself
 * to routes in onRoute, which Fastify runs as each route is registered: a route registered before the plugin
 * loaded (the plugin registered after the routes, or without `await` before them) is never limited, and
 * nothing said so. Fastify lists no routes, so every instance's routes are recorded from its creation, by an
 * onRoute hook added through the `fastify.initialization` diagnostics channel (which fastify() publishes
 * once the instance exists, before any plugin: Fastify's documented place for such a hook); at onReady the
 * plugin names those of its scope it did not see. An instance made before this module was loaded has no
 * record: nothing is reported for it.
 */

/** A route as registered: the instance it was registered on, and the options object onRoute hooks see. */
interface Registered {
  readonly instance: object;
  readonly method: string;
  readonly url: string;
  readonly options: RouteOptions;
}

const registered = new WeakMap<object, Registered[]>();

subscribe('fastify.initialization', (message) => {
  const fastify = (message as { fastify?: FastifyInstance } | null)?.fastify;
  if (typeof fastify?.addHook !== 'function') return;
  const routes: Registered[] = [];
  registered.set(fastify, routes);
  fastify.addHook('onRoute', function record(this: object, options) {
    // Read now: Fastify rewrites `url` of a prefixed '/' route after the hooks ran.
    routes.push({ instance: this, method: [options.method].flat().join('|'), url: options.url, options });
  });
});

/** The routes recorded in `fastify`'s scope: registered on it, or on an instance encapsulated inside it. */
function routesInScope(fastify: object): Registered[] {
  const root = enclosing(fastify).find((instance) => registered.has(instance));
  const routes = root === undefined ? [] : registered.get(root)!;
  return routes.filter((r) => withinScope(fastify, r.instance));
}

const SHOWN = 20;

/**
 * At onReady, one warning naming the routes of the plugin's scope that `seen` (the route options its onRoute
 * hook saw) does not hold and that `wanted` says it would have limited.
 */
export function reportUnattachedRoutes(
  fastify: FastifyInstance,
  seen: WeakSet<object>,
  wanted: (options: RouteOptions, url: string) => boolean,
  logger: Logger,
): void {
  fastify.addHook('onReady', async () => {
    const missed = routesInScope(fastify).filter((r) => !seen.has(r.options) && wanted(r.options, r.url));
    if (missed.length === 0) return;
    const names = [...new Set(missed.map((r) => `${r.method} ${r.url}`))];
    const shown = names.length > SHOWN ? `${names.slice(0, SHOWN).join(', ')} and ${names.length - SHOWN} more` : names.join(', ');
    logger.warn(
      `floodgate [routes-not-limited]: @floodgate/fastify limits none of these routes, registered in its scope before it loaded: ${shown}. ` +
        'Register it with `await app.register(rateLimit, ...)` before the routes; to leave a route out on purpose, give it ' +
        '`config: { rateLimit: false }` or list it in the `unlimitedRoutes` option (docs/fastify.md)',
    );
  });
}
