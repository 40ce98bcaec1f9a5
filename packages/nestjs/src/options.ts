import type { IncomingHttpHeaders } from 'node:http';
import {
  CONCURRENCY_HTTP_OPTION_KEYS,
  CONCURRENCY_OPTION_KEYS,
  ConfigError,
  HTTP_OPTION_KEYS,
  INHERITED_OPTION_KEYS,
  LIMITER_OPTION_KEYS,
  SLOW_DOWN_OPTION_KEYS,
  assertKnownOptions,
  describeValue,
  ownOptions,
  type ConcurrencyHttpOptions,
  type Cost,
  type HttpOptions,
  type LimitsOrLimiter,
  type SlowDownHttpOptions,
} from '@floodgate/core/adapter';

/**
 * The request a limit's functions (identify, skip, cost, plan, message...) see: Express's `req` on
 * @nestjs/platform-express, Fastify's `request` on @nestjs/platform-fastify (in GraphQL, the context's; for
 * a WebSocket message, the handshake request of its connection).
 */
export interface FloodgateRequest {
  headers: IncomingHttpHeaders;
  ip?: string;
  [key: string]: unknown;
}

/** Every option of a rate limit, each optional (`RateLimitOptions` requires `limits` or `limiter`). */
export interface RateLimitBaseOptions<Req = FloodgateRequest> extends HttpOptions<Req> {
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests): `(req, res)`. Default: status < 400. */
  requestWasSuccessful?: (req: Req, res: unknown) => boolean | Promise<boolean>;
  /**
   * The actual cost once the response is over (docs/budgets.md, "In an HTTP app"): `(req, res)` as
   * requestWasSuccessful gets them; `cost` is then the estimate. A WebSocket message has no response: its
   * estimate stays counted.
   */
  settle?: (req: Req, res: unknown) => Cost | Promise<Cost>;
}
/** A rate limit: `limits` (with any core option), or a shared `limiter`. */
export type RateLimitOptions<Req = FloodgateRequest> = LimitsOrLimiter<RateLimitBaseOptions<Req>>;
/** A slow-down (docs/slow-down.md): `limits` or a shared `limiter`, with `delayAfter`, `delayMs`, `maxDelayMs`. */
export type SlowDownOptions<Req = FloodgateRequest> = LimitsOrLimiter<SlowDownHttpOptions<Req>>;
/** A concurrency limit (docs/concurrency.md): `max` requests of one client in flight. */
export type ConcurrencyOptions<Req = FloodgateRequest> = ConcurrencyHttpOptions<Req>;

/** The module's options without `limits`/`limiter`: what the limits of decorators inherit. */
export interface FloodgateModuleBaseOptions<Req = FloodgateRequest> extends RateLimitBaseOptions<Req> {
  /** A slow-down on every route the guard guards, before the module's rate limit. */
  slowDown?: SlowDownOptions<Req>;
  /** A concurrency limit on every route the guard guards, before anything else. */
  concurrency?: ConcurrencyOptions<Req>;
}

/**
 * `FloodgateModule.forRoot()`'s options: with `limits` (or a shared `limiter`), a rate limit on every route
 * the guard guards; without, only the limits decorators set, which inherit where state lives (`redis`,
 * `prefix`, failure policy...) and how answers look (`headers`, `statusCode`, `message`...) from here.
 */
export type FloodgateModuleOptions<Req = FloodgateRequest> = FloodgateModuleBaseOptions<Req>;

/** The kinds of limit the guard runs, in the order it runs them at each level (module, class, handler). */
export type StepKind = 'concurrency' | 'slowDown' | 'rateLimit';

/*
 * What a decorator's limit inherits from the module's options (unless it sets its own): the options core
 * declares inherited (where and how state lives, and how answers look), as a Fastify route does. Which
 * requests count (limits, name, identify, skip, cost, plan) is the decorator's own business. A key the kind
 * of limit does not take is not inherited.
 */
const INHERITED = INHERITED_OPTION_KEYS;

/** The options each kind of limit takes. */
export const KEYS: Record<StepKind, readonly string[]> = {
  rateLimit: [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS],
  slowDown: [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS, ...SLOW_DOWN_OPTION_KEYS],
  concurrency: [...CONCURRENCY_OPTION_KEYS, ...CONCURRENCY_HTTP_OPTION_KEYS],
};
const CORE_KEYS: Record<StepKind, readonly string[]> = {
  rateLimit: LIMITER_OPTION_KEYS,
  slowDown: LIMITER_OPTION_KEYS,
  concurrency: CONCURRENCY_OPTION_KEYS,
};

/** A decorator's options with what they inherit from the module's (a shared `limiter` inherits no core option). */
export function inherit(kind: StepKind, module: Record<string, unknown>, own: object): Record<string, unknown> {
  const mine = ownOptions(own) as Record<string, unknown>;
  const merged: Record<string, unknown> = {};
  for (const key of INHERITED) {
    if (module[key] === undefined || !KEYS[kind].includes(key)) continue;
    if (mine.limiter !== undefined && CORE_KEYS[kind].includes(key) && key !== 'logger') continue;
    merged[key] = module[key];
  }
  return Object.assign(merged, mine);
}

const MODULE_ONLY = ['slowDown', 'concurrency'];

/**
 * Splits the module's options: the module-wide rate limit (undefined without `limits` or `limiter`), what
 * decorators inherit, and the module-wide slow-down and concurrency limit. An option that only a
 * module-wide rate limit would use, given without one, is an error: it would do nothing.
 */
export function splitModuleOptions(options: FloodgateModuleOptions): {
  rateLimit: Record<string, unknown> | undefined;
  inherited: Record<string, unknown>;
  slowDown: object | undefined;
  concurrency: object | undefined;
} {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('options', `must be an object (FloodgateModule.forRoot({ redis, limits })); got ${describeValue(options)}`);
  }
  assertKnownOptions(options, [...KEYS.rateLimit, ...MODULE_ONLY]);
  const own = ownOptions(options) as Record<string, unknown>;
  const { slowDown, concurrency, ...limit } = own;
  for (const [option, value] of [
    ['slowDown', slowDown],
    ['concurrency', concurrency],
  ] as const) {
    if (value !== undefined && (typeof value !== 'object' || value === null))
      throw new ConfigError(option, `must be an options object; got ${describeValue(value)}`);
  }
  const global = limit.limits !== undefined || limit.limiter !== undefined;
  if (!global) {
    const stray = Object.keys(limit).find((key) => !(INHERITED as readonly string[]).includes(key));
    if (stray !== undefined) {
      throw new ConfigError(
        stray,
        'applies to a module-wide rate limit, and these options have none (no `limits` or `limiter`): give `limits`, or set it on a @RateLimit()',
      );
    }
  }
  return {
    rateLimit: global ? limit : undefined,
    inherited: limit,
    slowDown: slowDown === undefined ? undefined : inherit('slowDown', limit, slowDown as object),
    concurrency: concurrency === undefined ? undefined : inherit('concurrency', limit, concurrency as object),
  };
}
