import { describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import type { HeaderList } from './headers';

/** What the adapter does: pass on, answer with `status` and `body`, or hand `error` to the framework. */
export interface HttpOutcome {
  action: 'next' | 'deny' | 'error';
  status: number;
  /** Headers with one value (overwrite). */
  set: HeaderList;
  /** List headers that several limiters on one response add to. */
  append: HeaderList;
  body?: object;
  /** `body` as JSON when Floodgate made it (the default or a string `message`), for adapters that send it as is. */
  json?: string;
  /** The tightest decision of the limiters that ran on this request so far (for req.rateLimit). */
  decision?: Decision;
  /**
   * This limiter's own admitted decision, when its options give units back after the response: the
   * adapter then calls `completed()` once the response is done (see whenResponseDone).
   */
  own?: Decision;
  /** slowDown only: this limiter's own decision, from which the delay is computed (http-slow-down.ts). */
  self?: Decision;
  error?: unknown;
}

/**
 * What a limiter of the HTTP layer does with a decision: `limit` (rateLimit) refuses a denied request;
 * `slow` (slowDown) lets a request over the count through, to be delayed, and refuses only for the other
 * reasons (deny list, block, failure 'closed', unidentified 'deny').
 */
export type HttpRole = 'limit' | 'slow';

/** Pass on, with nothing to write: a skipped request, or one let through unlimited. */
export const NOTHING: HttpOutcome = Object.freeze({ action: 'next', status: 200, set: [], append: [] }) as HttpOutcome;

/**
 * The outcome of an option function that threw. One that throws a non-error (undefined, a string) must
 * still fail the request: an adapter handing `next(undefined)` or `next('route')` to the framework would
 * let it through unlimited.
 */
export function failedOutcome(error: unknown, what = 'an option function'): HttpOutcome {
  return {
    action: 'error',
    status: 500,
    set: [],
    append: [],
    error: error instanceof Error ? error : new Error(`floodgate: ${what} threw a non-error: ${describeValue(error)}`, { cause: error }),
  };
}
