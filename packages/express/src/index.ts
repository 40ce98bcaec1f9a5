/**
 * `rateLimit(options)`: Floodgate rate limiting middleware for Express 4 and 5 (docs/express.md).
 *
 * @module @floodgate/express
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
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
import { sendDenial } from './deny';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The tightest Floodgate decision of the limiters that ran on this request. */
      rateLimit?: Decision;
    }
  }
}

/** Every option, each optional (`RateLimitOptions` requires `limits` or `limiter`). */
export interface RateLimitBaseOptions extends HttpOptions<Request> {
  /** Replaces the default denial response; headers (Retry-After included) are already set. */
  handler?: (req: Request, res: Response, next: NextFunction, decision: Decision) => void | Promise<void>;
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (req: Request, res: Response) => boolean | Promise<boolean>;
  /** The actual cost once the response is over (docs/budgets.md, "In an HTTP app"): `cost` is then the estimate. */
  settle?: (req: Request, res: Response) => Cost | Promise<Cost>;
}

/** `rateLimit()`'s options: `limits` (with any core option), or a shared `limiter`. */
export type RateLimitOptions = LimitsOrLimiter<RateLimitBaseOptions>;

/** The middleware, with the limiter it checks and a way to close it (tests, hot reload: build it again with other rules). */
export type RateLimitMiddleware = RequestHandler & {
  /** The limiter this middleware checks: its own, or the shared `limiter` it was given. */
  readonly limiter: Limiter;
  /** Closes the limiter this middleware created, which frees its name; a shared `limiter` passed in stays open. */
  close(): Promise<void>;
};

/** Default user: `req.user.id`, as Passport and most auth middleware leave it. */
function defaultUser(req: Request): unknown {
  return (req as { user?: { id?: unknown } }).user?.id;
}

/** Express middleware: `app.use(rateLimit(opts))` or `app.post('/search', rateLimit(opts), handler)`. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const http = createHttpLimiter<Request>(options, ['handler'], defaultUser);
  const handler = ownOptions(options).handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (req, res, next, decision); got ${describeValue(handler)}`);
  }
  const respond = (req: Request, res: Response, next: NextFunction, outcome: HttpOutcome): void | Promise<void> => {
    if (outcome.action === 'error') return next(outcome.error);
    if (outcome.decision !== undefined) req.rateLimit = outcome.decision;
    for (const [name, value] of outcome.set) res.setHeader(name, value);
    for (const [name, value] of outcome.append) appendHeaderItem(res, name, value);
    if (outcome.own !== undefined) whenResponseDone(res, (finished) => http.completed(outcome, finished, res.statusCode, [req, res]));
    if (outcome.action === 'next') return next();
    // Decided by reason, not status: `statusCode: 503` is a denial like any other.
    if (handler !== undefined && outcome.decision?.reason !== 'store-unavailable') return handler(req, res, next, outcome.decision!);
    sendDenial(res, outcome);
  };
  /*
   * Synchronous when the outcome is (a client the block cache already denies): no promise per request. Every
   * error, thrown or rejected (the handler's included), goes to next(err), and next runs once at most: Express
   * 4 ignores a promise a middleware returns (the request would hang) and Express 5 would call next for it, so
   * neither gets one. An error after next has run cannot go down the chain again: it is a process warning.
   */
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    let called = false;
    const once = (err?: unknown): void => {
      if (!called) {
        called = true;
        return next(err);
      }
      if (err !== undefined) process.emitWarning(`floodgate: an error after next() had run: ${String(err)}`, { code: 'FLOODGATE' });
    };
    const fail = (error: unknown): void => once(error || new Error('floodgate: rejected without an error'));
    try {
      watchServerOf(req.socket);
      const ip = req.ip;
      checkTrust(req, ip, http.warn);
      const outcome = http.decide(req, ip, req.rateLimit);
      const done = outcome instanceof Promise ? outcome.then((o) => respond(req, res, once, o)) : respond(req, res, once, outcome);
      if (typeof (done as PromiseLike<void> | undefined)?.then === 'function') (done as PromiseLike<void>).then(undefined, fail);
    } catch (error) {
      fail(error);
    }
  };
  const owned = ownOptions(options).limiter === undefined;
  return Object.assign(middleware as RequestHandler, {
    limiter: http.limiter,
    close: async () => (owned ? http.limiter.close() : undefined),
  });
}

export type { Decision, HeaderMode } from '@floodgate/core/adapter';
export { concurrency, type ConcurrencyOptions } from './concurrency';
export { slowDown, type SlowDownOptions, type SlowDownBaseOptions, type SlowDownMiddleware } from './slow-down';
