import type { NextRequest } from 'next/server.js';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
  WebResponseEnd,
  watchResponse,
  whenResponseDone,
  type Cost,
  type Decision,
  type HttpOptions,
  type Limiter,
  type LimitsOrLimiter,
} from '@floodgate/core/adapter';
import { CLIENT_ADDRESS_OPTION_KEYS, clientAddress, type ClientAddressOptions } from './client-address';
import { deny, withHeaders } from './respond';

/** Every option of a route's limiter, each optional (`RouteRateLimitOptions` requires `limits` or `limiter`). */
export interface RouteRateLimitBaseOptions extends HttpOptions<NextRequest>, ClientAddressOptions {
  /** Replaces the default 429 (headers, Retry-After included, are set on it after). */
  handler?: (request: NextRequest, decision: Decision) => Response | Promise<Response>;
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (request: NextRequest, response: Response) => boolean | Promise<boolean>;
  /** The actual cost once the response's body was sent to its end (docs/budgets.md): `cost` is then the estimate. */
  settle?: (request: NextRequest, response: Response) => Cost | Promise<Cost>;
}

export type RouteRateLimitOptions = LimitsOrLimiter<RouteRateLimitBaseOptions>;

/** A route handler as Next calls it: the request, and the route's context (`{ params }`). */
export type RouteHandler<C> = (request: NextRequest, context: C) => Response | Promise<Response>;

/** A route's limit, to wrap its handlers: `export const GET = limit(handler)`. */
export type RouteRateLimit = (<C>(handler: RouteHandler<C>) => RouteHandler<C>) & {
  readonly limiter: Limiter;
  close(): Promise<void>;
};

/**
 * A limit for route handlers (app/.../route.ts), checked in the handler's place, after the proxy's: both
 * count, as a route's limit adds to an app-wide one elsewhere. The response gets its RateLimit headers;
 * refunds and `settle` wait until its body has been sent to the end (a streamed one included) or the
 * client left. `const limit = routeRateLimit({ redis, limits }); export const POST = limit(handler)`.
 */
export function routeRateLimit(options: RouteRateLimitOptions): RouteRateLimit {
  const own = ownOptions(options);
  const handler = own.handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (request, decision) => Response; got ${describeValue(handler)}`);
  }
  const address = clientAddress(own);
  const http = createHttpLimiter<NextRequest>(options, ['handler', ...CLIENT_ADDRESS_OPTION_KEYS], () => undefined);
  const addressOf = address(http.warn);

  const wrap = <C>(route: RouteHandler<C>): RouteHandler<C> => {
    if (typeof route !== 'function')
      throw new ConfigError('handler', `the route handler to limit must be a function; got ${describeValue(route)}`);
    return async (request, context) => {
      const outcome = await http.decide(request, addressOf(request.headers));
      if (outcome.action === 'error') throw outcome.error;
      if (outcome.action === 'deny') {
        if (handler === undefined || outcome.decision?.reason === 'store-unavailable') return deny(outcome);
        return withHeaders(await handler(request, outcome.decision!), outcome.set, outcome.append);
      }
      const end = outcome.own === undefined ? undefined : new WebResponseEnd(request.signal);
      let response: Response;
      try {
        response = await route(request, context);
      } catch (error) {
        end?.over(false);
        throw error;
      }
      if (end === undefined) return withHeaders(response, outcome.set, outcome.append);
      const sent = withHeaders(response, outcome.set, outcome.append);
      whenResponseDone(end, (finished) => http.completed(outcome, finished, sent.status, [request, sent]));
      return watchResponse(sent, request.method, end);
    };
  };
  const owned = own.limiter === undefined;
  return Object.assign(wrap, { limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}

/** `limit(handler)` in one call: `export const GET = withRateLimit(limit, handler)`. */
export function withRateLimit<C>(limit: RouteRateLimit, handler: RouteHandler<C>): RouteHandler<C> {
  return limit(handler);
}
