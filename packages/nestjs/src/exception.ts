import { HttpException } from '@nestjs/common';
import type { Decision } from '@floodgate/core/adapter';

/** Builds an exception without a stack trace: a denial is an expected answer, not a bug, and a trace costs time per request. */
function quietly<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * A denial (429 by default, the deny list's 403, the 503 of `failure: 'closed'`), thrown by the guard with
 * the rate-limit headers and Retry-After already set on the response. Nest's exception filter sends its
 * body as JSON, as the other Floodgate adapters do; an exception filter of yours can catch it and answer
 * otherwise (`decision` says why).
 */
export class RateLimitException extends HttpException {
  /** The decision that denied (undefined for a concurrency limit, whose refusals carry none). */
  readonly decision: Decision | undefined;
  constructor(status: number, body: object, decision?: Decision) {
    super(body, status);
    this.name = 'RateLimitException';
    this.decision = decision;
  }
  static of(status: number, body: object, decision?: Decision): RateLimitException {
    return quietly(() => new RateLimitException(status, body, decision));
  }

  /**
   * What a GraphQL error made of this exception carries (graphql-js copies an original error's
   * `extensions`), and a WebSocket denial's answer: `code` (`'TOO_MANY_REQUESTS'` for a 429), `statusCode`,
   * and `retryAfter` in seconds when the decision says when to come back.
   */
  get extensions(): { code: string; statusCode: number; retryAfter?: number } {
    const status = this.getStatus();
    const error = (this.getResponse() as { error?: unknown }).error;
    const code = (typeof error === 'string' ? error : 'Error').toUpperCase().replace(/[^A-Z0-9]+/g, '_');
    const retryAfterMs = this.decision?.retryAfterMs ?? 0;
    return retryAfterMs > 0
      ? { code, statusCode: status, retryAfter: Math.max(1, Math.ceil(retryAfterMs / 1000)) }
      : { code, statusCode: status };
  }
}

/**
 * The client went away while its request waited (a slow-down's delay, a concurrency lease): no handler
 * runs, and there is nobody to answer. 499, as proxies log it.
 */
export class ClientGoneException extends HttpException {
  constructor() {
    super({ statusCode: 499, message: 'Client closed the request' }, 499);
    this.name = 'ClientGoneException';
  }
}
