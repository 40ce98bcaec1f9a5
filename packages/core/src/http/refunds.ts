import { ConfigError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { isThenable } from '../kernel/thenable';
import type { WarningName } from '../kernel/warnings';
import { checkBoolean, fnOption } from '../config/validate';
import type { Limiter } from '../engine/limiter';
import type { MaybePromise } from './option-types';
import type { HttpOutcome } from './outcome';
import { begin, end } from './completion';

/*
 * Giving a request's units back after its response (docs/refunds.md): `skipSuccessfulRequests`,
 * `skipFailedRequests` and `requestWasSuccessful`, read once; and the one rule of when a response is judged.
 */

export interface RefundOptions {
  successful: boolean;
  failed: boolean;
  wasSuccessful: ((...args: unknown[]) => MaybePromise<boolean>) | undefined;
  /** The option that asked for refunds, for messages; undefined when none did. */
  option: string | undefined;
}

/** The refund options an adapter's options hold. */
export function resolveRefunds(options: {
  skipSuccessfulRequests?: unknown;
  skipFailedRequests?: unknown;
  requestWasSuccessful?: unknown;
}): RefundOptions {
  for (const key of ['skipSuccessfulRequests', 'skipFailedRequests'] as const) {
    if (options[key] !== undefined) checkBoolean(options[key], key);
  }
  const successful = options.skipSuccessfulRequests === true;
  const failed = options.skipFailedRequests === true;
  const wasSuccessful = fnOption<RefundOptions['wasSuccessful']>(options.requestWasSuccessful, 'requestWasSuccessful');
  if (wasSuccessful !== undefined && !successful && !failed) {
    throw new ConfigError('requestWasSuccessful', 'does nothing without skipSuccessfulRequests or skipFailedRequests');
  }
  const option = successful ? 'skipSuccessfulRequests' : failed ? 'skipFailedRequests' : undefined;
  return { successful, failed, wasSuccessful, option };
}

/**
 * What a limiter does once a response is done (HttpLimiter.completed): gives the outcome's `own` units back
 * when the refund options say so. Never throws; a refund the store cannot take is a warning (the units stay
 * counted: never more admissions).
 */
export function refunder(
  limiter: Limiter,
  refunds: RefundOptions,
  warn: (name: WarningName, message: string) => void,
): (outcome: HttpOutcome, finished: boolean, status: number, args: readonly unknown[]) => void {
  const unreached = (error: unknown): void => {
    warn(
      'refund-failed',
      `a refund could not reach the store (${error instanceof Error ? error.message : describeValue(error)}); those units stay counted until their window passes`,
    );
    end();
  };
  // Counted (completion.ts) until the store has answered, or its warning is logged.
  const refund = (decision: Decision): void => {
    begin();
    try {
      limiter.refund(decision).then(end, unreached);
    } catch (error) {
      unreached(error); // a shared limiter's own refund() that throws
    }
  };
  return (outcome, finished, status, args) => {
    const own = outcome.own;
    // Only an outcome the server produced is judged. A connection that closed before the response finished
    // (during the check, a slowDown delay, the handler or the write) is the client's choice as often as
    // not: a reset while the handler works would buy back the work it did. It stays counted
    // (docs/refunds.md, where this differs from express-rate-limit).
    if (own === undefined || !finished) return;
    const give = (succeeded: boolean): void => {
      if (succeeded ? refunds.successful : refunds.failed) refund(own);
    };
    if (refunds.wasSuccessful === undefined) return give(status < 400);
    const judged = (error: unknown): void =>
      warn(
        'refund-failed',
        `requestWasSuccessful threw (${error instanceof Error ? error.message : describeValue(error)}); the request stays counted`,
      );
    try {
      const verdict = refunds.wasSuccessful(...args);
      if (!isThenable(verdict)) return give(verdict === true);
      // Counted while the application judges it: the refund it may lead to begins before this ends.
      begin();
      Promise.resolve(verdict).then(
        (v) => {
          give(v === true);
          end();
        },
        (error: unknown) => {
          judged(error);
          end();
        },
      );
    } catch (error) {
      judged(error);
    }
  };
}
