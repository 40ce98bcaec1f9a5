import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConfigError, INHERITED_OPTION_KEYS, LIMITER_OPTION_KEYS, describeValue, ownOptions } from '@floodgate/core/adapter';
import type { Cost, HttpOptions, LimitsOrLimiter } from '@floodgate/core/adapter';

export type RateLimitHook = 'onRequest' | 'preValidation' | 'preHandler';
const HOOKS: readonly RateLimitHook[] = ['onRequest', 'preValidation', 'preHandler'];

/** Every option of a route's limiter, each optional (`RouteRateLimitOptions` requires `limits` or `limiter`). */
export interface RouteRateLimitBaseOptions extends HttpOptions<FastifyRequest> {
  /** When this route's limiter runs; default: the plugin's `hook`. */
  hook?: RateLimitHook;
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (request: FastifyRequest, reply: FastifyReply) => boolean | Promise<boolean>;
  /** The actual cost once the response is over (docs/budgets.md, "In an HTTP app"): `cost` is then the estimate. */
  settle?: (request: FastifyRequest, reply: FastifyReply) => Cost | Promise<Cost>;
}

/** A route's own limiter, `config: { rateLimit: {...} }`: it ADDS to the global one. `limits` or `limiter`. */
export type RouteRateLimitOptions = LimitsOrLimiter<RouteRateLimitBaseOptions>;

/** Every plugin option, each optional. */
export interface RateLimitPluginBaseOptions extends RouteRateLimitBaseOptions {
  /** false: only routes with `config.rateLimit` are limited. Default true. */
  global?: boolean;
  /**
   * Routes the plugin leaves out on purpose, wherever they are registered: URLs as registered (`'/health'`,
   * `'/users/:id'`); one ending in `*` covers every route URL it starts (`'/docs/*'`). Like `config: {
   * rateLimit: false }` on each, and no `routes-not-limited` warning for them (docs/fastify.md).
   */
  unlimitedRoutes?: readonly string[];
}

/**
 * The plugin's options: `limits` (or a shared `limiter`) for the global limiter; with `global: false`,
 * neither is needed (each route brings its own), and the rest is what routes inherit.
 */
export type RateLimitPluginOptions = LimitsOrLimiter<RateLimitPluginBaseOptions> | (RateLimitPluginBaseOptions & { global: false });

/*
 * Settings a route inherits from the plugin (unless it sets its own): the options core declares inherited
 * (where and how state lives, how answers look), and the plugin's `hook`. Which requests count (limits,
 * name, identify, skip, cost) is the route's own business.
 */
const INHERITED = [...INHERITED_OPTION_KEYS, 'hook'] as const;
const CORE_KEYS: readonly string[] = LIMITER_OPTION_KEYS;

export function resolveHook(value: unknown, option: string): RateLimitHook {
  if (value === undefined) return 'onRequest';
  if ((HOOKS as readonly unknown[]).includes(value)) return value as RateLimitHook;
  throw new ConfigError(option, `must be one of ${HOOKS.join(', ')}; got ${describeValue(value)}`);
}

/** `unlimitedRoutes` as a test of a route URL (as registered), validated once. */
export function resolveUnlimitedRoutes(value: unknown): (url: string) => boolean {
  if (value === undefined) return () => false;
  if (!Array.isArray(value)) {
    throw new ConfigError('unlimitedRoutes', `must be an array of route URLs such as ['/health']; got ${describeValue(value)}`);
  }
  const exact = new Set<string>();
  const prefixes: string[] = [];
  value.forEach((url: unknown, i) => {
    if (typeof url !== 'string' || !url.startsWith('/')) {
      throw new ConfigError(
        `unlimitedRoutes[${i}]`,
        `must be a route URL as registered, starting with '/' ('/health', '/users/:id', or '/docs/*' for every route under /docs/); got ${describeValue(url)}`,
      );
    }
    exact.add(url);
    if (url.endsWith('*')) prefixes.push(url.slice(0, -1));
  });
  return (url) => exact.has(url) || prefixes.some((prefix) => url.startsWith(prefix));
}

/** A route's options with what it inherits from the plugin's (a shared `limiter` inherits no core option). */
export function routeOptions(plugin: RateLimitPluginBaseOptions, own: RouteRateLimitBaseOptions): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  const from = plugin as Record<string, unknown>;
  for (const key of INHERITED) {
    if (from[key] !== undefined && !(own.limiter !== undefined && CORE_KEYS.includes(key) && key !== 'logger')) merged[key] = from[key];
  }
  Object.assign(merged, ownOptions(own));
  // Manual blocks are prefix-wide, and `cluster.colocate` decides their keys: one prefix, one layout.
  const colocated = (o: { cluster?: unknown }): unknown => (o.cluster as { colocate?: unknown } | undefined)?.colocate ?? false;
  if (
    own.limiter === undefined &&
    (merged.prefix ?? 'floodgate') === (plugin.prefix ?? 'floodgate') &&
    colocated(merged) !== colocated(plugin)
  ) {
    throw new ConfigError(
      'config.rateLimit.cluster',
      "differs from the plugin's on the same prefix: every limiter of a prefix shares its block keys, so give them one `cluster.colocate` (or this route its own `prefix`)",
    );
  }
  return merged;
}
