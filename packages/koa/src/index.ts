/**
 * `rateLimit(options)`: Floodgate rate limiting middleware for Koa 2 and 3 (docs/koa.md).
 *
 * @module @floodgate/koa
 */
import type { Context, Middleware, Next } from 'koa';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
  rateLimitHeadersOn,
  watchServerOf,
  whenResponseDone,
  type Cost,
  type Decision,
  type HttpOptions,
  type HttpOutcome,
  type Limiter,
  type LimitsOrLimiter,
  appendHeaderItem,
} from '@floodgate/core/adapter';
import { checkTrust } from './trust';

declare module 'koa' {
  interface DefaultState {
    /** The tightest Floodgate decision of the limiters that ran on this request. */
    rateLimit?: Decision;
  }
}

/** Every option, each optional (`RateLimitOptions` requires `limits` or `limiter`). */
export interface RateLimitBaseOptions extends HttpOptions<Context> {
  /** Replaces the default denial response; headers (Retry-After included) are already set. */
  handler?: (ctx: Context, next: Next, decision: Decision) => unknown;
  /** The actual cost once the response is over (docs/budgets.md, "In an HTTP app"): `cost` is then the estimate. */
  settle?: (ctx: Context) => Cost | Promise<Cost>;
}

/** `rateLimit()`'s options: `limits` (with any core option), or a shared `limiter`. */
export type RateLimitOptions = LimitsOrLimiter<RateLimitBaseOptions>;

/** The middleware, with the limiter it checks and a way to close it (tests, hot reload: build it again with other rules). */
export type RateLimitMiddleware = Middleware & {
  /** The limiter this middleware checks: its own, or the shared `limiter` it was given. */
  readonly limiter: Limiter;
  /** Closes the limiter this middleware created, which frees its name; a shared `limiter` passed in stays open. */
  close(): Promise<void>;
};

/** What Koa's `ctx.type = 'json'` sets, which an object body gets when no Content-Type is set yet. */
const JSON_TYPE = 'application/json; charset=utf-8';

/** Default user: `ctx.state.user.id`, where koa-passport and koa-jwt leave the user. */
function defaultUser(ctx: Context): unknown {
  return (ctx.state as { user?: { id?: unknown } }).user?.id;
}

/** Rethrows `error` with the response's rate-limit headers under its own `headers`, which Koa's ctx.onerror sets. */
function carryHeaders(ctx: Context, error: unknown): never {
  if (typeof error === 'object' && error !== null) {
    const own = (error as { headers?: unknown }).headers;
    try {
      (error as { headers: object }).headers = { ...rateLimitHeadersOn(ctx.res), ...(typeof own === 'object' && own !== null ? own : {}) };
    } catch {
      // A frozen error keeps what it has.
    }
  }
  throw error;
}

/** Koa middleware: `app.use(rateLimit(opts))` or `router.post('/search', rateLimit(opts), handler)`. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const http = createHttpLimiter<Context>(options, ['handler'], defaultUser);
  const handler = ownOptions(options).handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (ctx, next, decision); got ${describeValue(handler)}`);
  }
  const respond = (ctx: Context, next: Next, outcome: HttpOutcome): unknown => {
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.decision !== undefined) ctx.state.rateLimit = outcome.decision;
    const res = ctx.res;
    // What ctx.set and ctx.append do with string values (nothing once headers are sent), without Koa's wrappers.
    if (!res.headersSent) {
      for (const [name, value] of outcome.set) res.setHeader(name, value);
      for (const [name, value] of outcome.append) appendHeaderItem(res, name, value);
    }
    if (outcome.own !== undefined) whenResponseDone(res, (finished) => http.completed(outcome, finished, res.statusCode, [ctx]));
    if (outcome.action === 'next') return next();
    // Decided by reason, not status: `statusCode: 503` is a denial like any other.
    if (handler !== undefined && outcome.decision?.reason !== 'store-unavailable') return handled(ctx, next, outcome.decision!);
    // Floodgate's own body (a plain object): the type Koa gives it ('json'), without Koa's per-response lookup.
    if (outcome.json !== undefined && !res.headersSent && !res.hasHeader('Content-Type')) res.setHeader('Content-Type', JSON_TYPE);
    ctx.status = outcome.status;
    ctx.body = outcome.body;
    return undefined;
  };
  /*
   * A handler that throws the denial (koa-ratelimit's `throw: true`): Koa's default error handling removes
   * every header of the response and sets only the error's `headers`, so the error carries the rate-limit
   * headers and Retry-After (its own headers win).
   */
  const handled = (ctx: Context, next: Next, decision: Decision): unknown => {
    try {
      const done = handler!(ctx, next, decision);
      return typeof (done as PromiseLike<unknown> | undefined)?.then === 'function'
        ? (done as PromiseLike<unknown>).then(undefined, (error: unknown) => carryHeaders(ctx, error))
        : done;
    } catch (error) {
      return carryHeaders(ctx, error);
    }
  };
  // Synchronous when the outcome is (a client the block cache already denies): no promise of its own.
  const floodgate = function floodgate(ctx: Context, next: Next): unknown {
    watchServerOf(ctx.req.socket);
    checkTrust(ctx, http.warn);
    const outcome = http.decide(ctx, ctx.ip, ctx.state.rateLimit);
    if (outcome instanceof Promise) return outcome.then((o) => respond(ctx, next, o));
    return respond(ctx, next, outcome);
  };
  const owned = ownOptions(options).limiter === undefined;
  return Object.assign(floodgate as Middleware, { limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}

export type { Decision, HeaderMode } from '@floodgate/core/adapter';
export { concurrency, type ConcurrencyOptions } from './concurrency';
export { slowDown, type SlowDownOptions, type SlowDownBaseOptions, type SlowDownMiddleware } from './slow-down';
