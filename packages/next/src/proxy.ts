import { NextResponse, type NextRequest } from 'next/server.js';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
  type Decision,
  type HttpOptions,
  type Limiter,
  type LimitsOrLimiter,
} from '@floodgate/core/adapter';
import { CLIENT_ADDRESS_OPTION_KEYS, clientAddress, refuseAfterResponse, type ClientAddressOptions } from './client-address';
import { compileMatcher, type Matcher } from './matcher';
import { deny, withHeaders, writeHeaders } from './respond';

/** Every option of the proxy's limiter, each optional (`ProxyRateLimitOptions` requires `limits` or `limiter`). */
export interface ProxyRateLimitBaseOptions
  extends Omit<HttpOptions<NextRequest>, 'skipSuccessfulRequests' | 'skipFailedRequests'>, ClientAddressOptions {
  /** The paths this limit applies to, as a proxy's `config.matcher` writes them: `'/api/:path*'`. Default: every path the proxy runs on. */
  matcher?: Matcher;
  /** Replaces the default 429 (headers, Retry-After included, are set on it after). */
  handler?: (request: NextRequest, decision: Decision) => Response | Promise<Response>;
}

export type ProxyRateLimitOptions = LimitsOrLimiter<ProxyRateLimitBaseOptions>;

const RUN = Symbol('floodgate.next.run');
/** The tightest decision so far of the limiters a chain ran on a request (each writes the headers only when it is tighter). */
const decisions = new WeakMap<NextRequest, Decision>();

/** The proxy function (`export const proxy = rateLimit(...)`), with its limiter and a way to close it. */
export type ProxyRateLimit = ((request: NextRequest) => Promise<Response>) & {
  readonly limiter: Limiter;
  close(): Promise<void>;
  /** @internal chain()'s step. */
  readonly [RUN]: (request: NextRequest, headers: Headers) => Promise<Response | undefined>;
};

/**
 * A limiter for `proxy.ts` (`middleware.ts` on Next 15): a denied request is answered 429 with the
 * headers and body of every Floodgate adapter; one let through goes on with its RateLimit headers on the
 * app's response. `export const proxy = rateLimit({ redis, limits, matcher: '/api/:path*' })`.
 */
export function rateLimit(options: ProxyRateLimitOptions): ProxyRateLimit {
  const own = ownOptions(options);
  refuseAfterResponse(own, 'the proxy');
  const handler = own.handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (request, decision) => Response; got ${describeValue(handler)}`);
  }
  const matches = compileMatcher(own.matcher);
  const address = clientAddress(own);
  const http = createHttpLimiter<NextRequest>(options, ['handler', 'matcher', ...CLIENT_ADDRESS_OPTION_KEYS], () => undefined);
  const addressOf = address(http.warn);

  const run = async (request: NextRequest, headers: Headers): Promise<Response | undefined> => {
    if (matches !== undefined && !matches(request.nextUrl.pathname)) return undefined;
    const outcome = await http.decide(request, addressOf(request.headers), decisions.get(request));
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.decision !== undefined) decisions.set(request, outcome.decision);
    if (outcome.action === 'next') return void writeHeaders(headers, outcome.set, outcome.append);
    if (handler === undefined || outcome.decision?.reason === 'store-unavailable') return deny(outcome);
    return withHeaders(await handler(request, outcome.decision!), outcome.set, outcome.append);
  };
  const proxy = async (request: NextRequest): Promise<Response> => {
    const headers = new Headers();
    return (await run(request, headers)) ?? goOn(request, headers);
  };
  const owned = own.limiter === undefined;
  return Object.assign(proxy, {
    limiter: http.limiter,
    close: async () => (owned ? http.limiter.close() : undefined),
    [RUN]: run,
  });
}

/**
 * Several limiters in one proxy, in order (a general limit, a stricter one on '/login'): the first denial
 * is the answer; a request every one lets through goes on with all their headers.
 */
export function chain(...limiters: ProxyRateLimit[]): (request: NextRequest) => Promise<Response> {
  limiters.forEach((limiter, i) => {
    if (typeof limiter?.[RUN] !== 'function')
      throw new ConfigError(`chain[${i}]`, `must be a rateLimit() of @floodgate/next; got ${describeValue(limiter)}`);
  });
  return async (request) => {
    const headers = new Headers();
    for (const limiter of limiters) {
      const denied = await limiter[RUN](request, headers);
      if (denied !== undefined) return denied;
    }
    return goOn(request, headers);
  };
}

/** The header the app's routes read the proxy's decision from (remainingOf); a client's own is overwritten. */
export const REMAINING_HEADER = 'x-floodgate-remaining';

/** On to the app, with Floodgate's headers on its response and the tightest decision's remaining count on the request. */
function goOn(request: NextRequest, headers: Headers): Response {
  const forwarded = new Headers(request.headers);
  const decision = decisions.get(request);
  if (decision === undefined) forwarded.delete(REMAINING_HEADER);
  else forwarded.set(REMAINING_HEADER, String(decision.remaining));
  return NextResponse.next({ headers, request: { headers: forwarded } });
}

/**
 * In a route handler or a page: how many requests the proxy's limits leave this client (the tightest
 * rule's remaining count), or undefined when no limit of the proxy ran on the request.
 */
export function remainingOf(headers: Headers): number | undefined {
  const value = headers.get(REMAINING_HEADER);
  return value === null || !/^\d+$/.test(value) ? undefined : Number(value);
}
