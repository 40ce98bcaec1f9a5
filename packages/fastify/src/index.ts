/**
 * The Floodgate plugin for Fastify 5, with per-route `config.rateLimit` (docs/fastify.md).
 *
 * @module @floodgate/fastify
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  ConfigError,
  HTTP_OPTION_KEYS,
  LIMITER_OPTION_KEYS,
  assertKnownOptions,
  createHttpLimiter,
  describeValue,
  errorBody,
  ownOptions,
  safeLogger,
  watchPeerAddresses,
} from '@floodgate/core/adapter';
import type { Decision, HttpLimiter, Limiter } from '@floodgate/core/adapter';
import { addHook, hookFor, type Limiters, type Thrown } from './denial';
import { reportUnattachedRoutes } from './route-coverage';
import {
  resolveHook,
  resolveUnlimitedRoutes,
  routeOptions,
  type RateLimitHook,
  type RateLimitPluginBaseOptions,
  type RateLimitPluginOptions,
  type RouteRateLimitBaseOptions,
  type RouteRateLimitOptions,
} from './options';

export { RateLimitError } from './denial';

export type { RateLimitHook, RateLimitPluginOptions, RateLimitPluginBaseOptions, RouteRateLimitOptions, RouteRateLimitBaseOptions };

/** A hook function for `onRequest`, `preValidation` or `preHandler` (a route's, or the not-found handler's). */
export type RateLimitHookHandler = ReturnType<typeof hookFor>;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * A hook running the plugin's limiter (no options) or a limiter of its own (`options`, inheriting from the
     * plugin as a route's `config.rateLimit` does), for what `onRoute` does not reach, such as the not-found
     * handler: `app.setNotFoundHandler({ preHandler: app.rateLimit() }, handler)`.
     */
    rateLimit(options?: RouteRateLimitOptions): RateLimitHookHandler;
  }
  interface FastifyRequest {
    /** The tightest Floodgate decision of the limiters that ran on this request. */
    rateLimit?: Decision;
  }
  interface FastifyContextConfig {
    rateLimit?: RouteRateLimitOptions | false;
  }
}

/**
 * Routes whose `config.rateLimit` a registration already made a limiter for. With several registrations
 * in one scope (or a scope and its child), each runs its own limiter on a route, but the route's own
 * limiter is made once, by the first to see the route: made twice, it would count each request twice.
 */
const routeLimited = new WeakSet<object>();

/** Default user: `request.user.id`, as @fastify/jwt, @fastify/passport and most auth plugins leave it. */
const defaultUser = (request: FastifyRequest): unknown => (request as { user?: { id?: unknown } }).user?.id;

async function floodgatePlugin(fastify: FastifyInstance, pluginOptions: RateLimitPluginOptions): Promise<void> {
  assertKnownOptions(pluginOptions, [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS, 'hook', 'global', 'unlimitedRoutes']);
  const options: RateLimitPluginBaseOptions = ownOptions(pluginOptions);
  // Every connection's address is read on accept, so a client that resets right after its request is still known.
  watchPeerAddresses(fastify.server);
  if (options.global !== undefined && typeof options.global !== 'boolean')
    throw new ConfigError('global', `must be true or false; got ${describeValue(options.global)}`);
  const hook = resolveHook(options.hook, 'hook');
  const unlimited = resolveUnlimitedRoutes(options.unlimitedRoutes);
  const limiterOptions: RateLimitPluginBaseOptions = { ...options };
  delete limiterOptions.global;
  delete limiterOptions.hook;
  delete limiterOptions.unlimitedRoutes;
  const globalLimiter = options.global === false ? undefined : createHttpLimiter<FastifyRequest>(limiterOptions, [], defaultUser);
  // Limiters made here (not shared ones passed as `limiter`) free their name when the app closes.
  const owned: Limiter[] = globalLimiter !== undefined && options.limiter === undefined ? [globalLimiter.limiter] : [];
  fastify.addHook('onClose', async () => {
    await Promise.all(owned.map((l) => l.close()));
  });
  // Keyed by the config object: Fastify's automatic HEAD route carries its GET's config, so it finds the
  // GET's limiter here instead of creating a second one under the same name.
  const routeLimiters = new WeakMap<RouteRateLimitBaseOptions, { hook: RateLimitHook; http: HttpLimiter<FastifyRequest> }>();
  const thrown: Thrown = new WeakMap();

  function routeLimiter(own: RouteRateLimitBaseOptions): { hook: RateLimitHook; http: HttpLimiter<FastifyRequest> } {
    const cached = routeLimiters.get(own);
    if (cached !== undefined) return cached;
    const merged = routeOptions(options, own);
    const { hook: routeHook, ...rest } = merged;
    const made = { hook: resolveHook(routeHook, 'config.rateLimit.hook'), http: createHttpLimiter<FastifyRequest>(rest, [], defaultUser) };
    routeLimiters.set(own, made);
    if (own.limiter === undefined) owned.push(made.http.limiter);
    return made;
  }

  // The routes onRoute saw (attached to or left out), so that onReady can name the ones it never saw.
  const seen = new WeakSet<object>();
  fastify.addHook('onRoute', (route) => {
    seen.add(route);
    const own: unknown = route.config?.rateLimit;
    if (own === false) return;
    if (own !== undefined && (typeof own !== 'object' || own === null)) {
      throw new ConfigError(
        'config.rateLimit',
        `of ${route.method} ${route.url} must be an options object or false; got ${describeValue(own)}`,
      );
    }
    if (unlimited(route.url)) {
      if (own === undefined) return;
      throw new ConfigError(
        'config.rateLimit',
        `of ${route.method} ${route.url}: the route is in \`unlimitedRoutes\`; give it a limiter or list it, not both`,
      );
    }
    const byHook = new Map<RateLimitHook, Limiters>();
    const add = (at: RateLimitHook, http: HttpLimiter<FastifyRequest>): void => void byHook.set(at, [...(byHook.get(at) ?? []), http]);
    if (globalLimiter !== undefined) add(hook, globalLimiter);
    const made = own === undefined || routeLimited.has(route) ? undefined : routeLimiter(own as RouteRateLimitBaseOptions);
    routeLimited.add(route);
    if (made !== undefined) add(made.hook, made.http);
    for (const [at, limiters] of byHook) addHook(route, at, hookFor(limiters, thrown));
  });
  // What the onRoute above would have limited, had it seen the route.
  const wanted = (route: { config?: { rateLimit?: unknown } }, url: string): boolean => {
    const own = route.config?.rateLimit;
    return own !== false && !unlimited(url) && (own !== undefined || globalLimiter !== undefined);
  };
  reportUnattachedRoutes(fastify, seen, wanted, safeLogger(options.logger));

  // A hook for what onRoute does not reach (the not-found handler); its own `hook` option does not apply there.
  let pluginLimiter = globalLimiter;
  const factory = (own?: RouteRateLimitOptions): RateLimitHookHandler => {
    if (own !== undefined) return hookFor([routeLimiter(own as RouteRateLimitBaseOptions).http], thrown);
    if (pluginLimiter === undefined)
      owned.push((pluginLimiter = createHttpLimiter<FastifyRequest>(limiterOptions, [], defaultUser)).limiter);
    return hookFor([pluginLimiter], thrown);
  };
  // Typed loosely: a program that also sees @fastify/rate-limit's declaration (this repository's bench) has two.
  // Once per scope: a second registration in the same scope leaves the first one's (a child scope has its own).
  if (!Object.hasOwn(fastify, 'rateLimit')) fastify.decorate('rateLimit', factory as never);

  // Fastify's default error handler renders a denial as { statusCode, error, message }, the default body; a
  // configured object body (message: {...}) is put back here. Only for denials thrown to that handler
  // (denial.ts), and only while the payload is still that rendering: an app's own handler decides its body.
  // Synchronous (callback) form: it runs on every response, and an async hook costs a promise each time.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    const error = thrown.get(request);
    if (error === undefined || reply.statusCode !== error.statusCode || typeof payload !== 'string') return done(null, payload);
    const rendered = JSON.stringify(errorBody(error.statusCode, error.message));
    done(null, payload === rendered ? JSON.stringify(error.body) : payload);
  });
}

/** `await app.register(rateLimit, { redis, limits })`; per route `config: { rateLimit: {...} | false }`. */
export const rateLimit = fp(floodgatePlugin, { fastify: '5.x', name: '@floodgate/fastify' });
export default rateLimit;
export type { Decision, HeaderMode } from '@floodgate/core';
export { concurrency, type ConcurrencyOptions } from './concurrency';
export { slowDown, type SlowDownOptions, type SlowDownBaseOptions } from './slow-down';
