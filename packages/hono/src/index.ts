/**
 * `rateLimit(options)`: Floodgate rate limiting middleware for Hono (docs/hono.md).
 *
 * @module @floodgate/hono
 */
import type { Context, MiddlewareHandler, Next } from 'hono';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
  whenResponseDone,
  type Cost,
  type Decision,
  type HttpOptions,
  type HttpOutcome,
  type Limiter,
  type LimitsOrLimiter,
} from '@floodgate/core/adapter';
import { CLIENT_ADDRESS_OPTION_KEYS, clientAddress, type ClientAddressOptions } from './client-address';
import { keepHeaders, writeHeaders } from './headers';
import { nextThenWatch, watchOf } from './response-end';
import { deny, defaultUser } from './respond';

declare module 'hono' {
  interface ContextVariableMap {
    /** The tightest Floodgate decision of the limiters that ran on this request. */
    rateLimit?: Decision;
  }
}

/** Every option, each optional (`RateLimitOptions` requires `limits` or `limiter`). */
export interface RateLimitBaseOptions extends HttpOptions<Context>, ClientAddressOptions {
  /**
   * Replaces the default denial response; headers (Retry-After included) are already set. Return a
   * Response, or call `next()` to let the request through after all.
   */
  handler?: (c: Context, next: Next, decision: Decision) => Response | void | Promise<Response | void>;
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (c: Context) => boolean | Promise<boolean>;
  /** The actual cost once the response is over (docs/budgets.md, "In an HTTP app"): `cost` is then the estimate. */
  settle?: (c: Context) => Cost | Promise<Cost>;
}

/** `rateLimit()`'s options: `limits` (with any core option), or a shared `limiter`. */
export type RateLimitOptions = LimitsOrLimiter<RateLimitBaseOptions>;

/** The middleware, with the limiter it checks and a way to close it (tests, hot reload: build it again with other rules). */
export type RateLimitMiddleware = MiddlewareHandler & {
  /** The limiter this middleware checks: its own, or the shared `limiter` it was given. */
  readonly limiter: Limiter;
  /** Closes the limiter this middleware created, which frees its name; a shared `limiter` passed in stays open. */
  close(): Promise<void>;
};

/** Hono middleware: `app.use(rateLimit(opts))` or `app.post('/search', rateLimit(opts), handler)`. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  // This adapter's own options first: a ConfigError after the limiter was made would keep its name taken.
  const own = ownOptions(options);
  const handler = own.handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (c, next, decision); got ${describeValue(handler)}`);
  }
  const address = clientAddress(own);
  const http = createHttpLimiter<Context>(options, ['handler', ...CLIENT_ADDRESS_OPTION_KEYS], defaultUser);
  const addressOf = address(http.warn);

  const respond = async (c: Context, next: Next, outcome: HttpOutcome): Promise<Response | void> => {
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.decision !== undefined) c.set('rateLimit', outcome.decision);
    writeHeaders(c, outcome.set, outcome.append);
    const watch = outcome.own === undefined ? undefined : watchOf(c);
    if (watch !== undefined) whenResponseDone(watch.end, (finished) => http.completed(outcome, finished, c.res.status, [c]));
    if (outcome.action === 'next') {
      await nextThenWatch(c, next, watch?.owner === true);
      return keepHeaders(c);
    }
    // Decided by reason, not status: `statusCode: 503` is a denial like any other.
    if (handler === undefined || outcome.decision?.reason === 'store-unavailable') return deny(c, outcome);
    const res = await handler(c, next, outcome.decision!);
    if (res instanceof Response) c.res = res;
    if (c.finalized) keepHeaders(c);
  };

  const middleware: MiddlewareHandler = async (c, next) => {
    const outcome = http.decide(c, addressOf(c), c.get('rateLimit'));
    return respond(c, next, outcome instanceof Promise ? await outcome : outcome);
  };
  const owned = own.limiter === undefined;
  return Object.assign(middleware, { limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}

export type { Decision, HeaderMode, SlowDownInfo } from '@floodgate/core/adapter';
export type { ClientAddressOptions } from './client-address';
export { concurrency, type ConcurrencyOptions } from './concurrency';
export { slowDown, type SlowDownOptions, type SlowDownBaseOptions, type SlowDownMiddleware } from './slow-down';
