import { headers as requestHeaders } from 'next/headers.js';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
  type DenyReason,
  type HttpOptions,
  type Limiter,
  type LimitsOrLimiter,
} from '@floodgate/core/adapter';
import { CLIENT_ADDRESS_OPTION_KEYS, clientAddress, refuseAfterResponse, type ClientAddressOptions } from './client-address';

/*
 * Server actions (docs/next.md, "Server actions"): an action is a POST the framework answers for itself, so
 * there is no 429 to send. The caller is read from the request's headers (next/headers), and a denial is a
 * value the action returns to its form, or an error it throws to the nearest error boundary.
 */

/** What an action's option functions see of its caller. */
export interface ActionCaller {
  /** The request's headers, as next/headers gives them. */
  readonly headers: Headers;
}

export type ActionRateLimitBaseOptions = Omit<
  HttpOptions<ActionCaller>,
  'skipSuccessfulRequests' | 'skipFailedRequests' | 'headers' | 'statusCode'
> &
  ClientAddressOptions;

export type ActionRateLimitOptions = LimitsOrLimiter<ActionRateLimitBaseOptions>;

/** A denied action call, as plain data a client component can show (it crosses the server/client boundary). */
export interface ActionDenial {
  readonly rateLimited: true;
  /** The message the limiter's `message` option gives (default: "Too many requests, please try again later."). */
  readonly message: string;
  /** Wait this long before trying again (0 when waiting will not help: a deny list, a failure with `failure: 'closed'`). */
  readonly retryAfterMs: number;
  readonly reason: DenyReason | undefined;
}

/** The same denial, thrown by `orThrow()` (to an error boundary: its message and `digest` reach the client in development only). */
export class ActionRateLimitedError extends Error {
  readonly denial: ActionDenial;
  constructor(denial: ActionDenial) {
    super(denial.message);
    this.name = 'ActionRateLimitedError';
    this.denial = denial;
  }
}

/** `await limit()`: the denial, or undefined when the call may go on; `await limit.orThrow()` throws it. */
export type ActionRateLimit = (() => Promise<ActionDenial | undefined>) & {
  orThrow(): Promise<void>;
  readonly limiter: Limiter;
  close(): Promise<void>;
};

/**
 * A limit for server actions: `const limit = actionRateLimit({ redis, limits })`, then first thing in
 * the action `const denied = await limit(); if (denied) return denied;`.
 */
export function actionRateLimit(options: ActionRateLimitOptions): ActionRateLimit {
  const own = ownOptions(options);
  refuseAfterResponse(own, 'a server action');
  for (const name of ['headers', 'statusCode'] as const) {
    if ((own as Record<string, unknown>)[name] !== undefined)
      throw new ConfigError(
        name,
        `has no effect on a server action, which sends no HTTP status or headers of its own; got ${describeValue((own as Record<string, unknown>)[name])}`,
      );
  }
  const address = clientAddress(own);
  const http = createHttpLimiter<ActionCaller>(options, CLIENT_ADDRESS_OPTION_KEYS, () => undefined);
  const addressOf = address(http.warn);

  const limit = async (): Promise<ActionDenial | undefined> => {
    const headers = (await requestHeaders()) as unknown as Headers;
    const outcome = await http.decide({ headers }, addressOf(headers));
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.action === 'next') return undefined;
    const message = (outcome.body as { message?: unknown } | undefined)?.message;
    return {
      rateLimited: true,
      message: typeof message === 'string' ? message : 'Too many requests, please try again later.',
      retryAfterMs: outcome.decision?.retryAfterMs ?? 0,
      reason: outcome.decision?.reason,
    };
  };
  const orThrow = async (): Promise<void> => {
    const denial = await limit();
    if (denial !== undefined) throw new ActionRateLimitedError(denial);
  };
  const owned = own.limiter === undefined;
  return Object.assign(limit, { orThrow, limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}
