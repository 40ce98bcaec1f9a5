import { ConfigError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { isThenable } from '../kernel/thenable';
import type { WarningName } from '../kernel/warnings';
import { fnOption } from '../config/validate';
import { FloodgateLimiter, reserveAt, type Cost, type Limiter, type Reservation } from '../engine/limiter';
import { settleFailed, type ReportingReservation } from '../engine/settle-failures';
import type { MaybePromise } from './option-types';
import type { RefundOptions } from './refunds';
import { begin, end } from './completion';

/*
 * `settle` (docs/budgets.md, "In an HTTP app"): a request is counted with limiter.reserve() at its `cost`
 * (the estimate), and once its response is over the application's settle(...) says what it actually cost,
 * which settles the reservation. Over means sent in full or the connection closed first, whoever closed it:
 * the work was done up to then, so a client that resets a stream still pays for what settle says it
 * produced (nothing is cancelled for a client's behaviour). A settle that throws, rejects or answers no
 * valid cost (nothing at all included: undefined is not the default cost of 1 here) leaves the estimate
 * counted, never an admission; each is a 'settle-failed' event of the limiter and a recurring warning.
 */

export type SettleFn = (...args: unknown[]) => MaybePromise<Cost>;

/**
 * The `settle` option, read once. It gives units back after the response as skipSuccessfulRequests and
 * skipFailedRequests do: two give-backs of one request would conflict (which comes first, and from what),
 * so they are refused together; a settle of 0 is how a request stops counting.
 */
export function resolveSettle(options: { settle?: unknown }, refunds: RefundOptions): SettleFn | undefined {
  const settle = fnOption<SettleFn>(options.settle, 'settle');
  if (settle !== undefined && refunds.option !== undefined) {
    throw new ConfigError(
      'settle',
      `cannot be combined with ${refunds.option}: both give a request's units back after its response; have settle answer 0 for a request that should not count`,
    );
  }
  return settle;
}

/**
 * A limiter `settle` counts with must reserve: refunds on (its receipts are what a settle gives back from).
 * `limiter` undefined: the adapter's own, made refundable, unless its options say `refunds: false`.
 */
export function assertSettleable(limiter: Limiter | undefined, explicitRefunds: unknown): void {
  if (limiter === undefined) {
    if (explicitRefunds === false)
      throw new ConfigError(
        'settle',
        "needs `refunds: true` (a settle gives back from the refundable script's receipts); leave `refunds` out or set it true",
      );
    return;
  }
  if (typeof (limiter as Partial<Limiter>).reserve !== 'function' || limiter.refunds !== true) {
    throw new ConfigError(
      'settle',
      'needs a shared limiter made with `refunds: true` (createLimiter({ ..., refunds: true })): it is counted with reserve()',
    );
  }
}

/**
 * Reservations of the requests a limiter admitted, until their responses are over: `reserve` counts one
 * (the decision is what the HTTP pipeline sees), `completed` settles it with the application's answer.
 */
const DONE: Promise<void> = Promise.resolve();

export function reservations(
  limiter: Limiter,
  settle: SettleFn,
  warn: (name: WarningName, message: string) => void,
): {
  reserve(ids: string[], cost: Cost, plan: string | undefined, address: string | undefined): Promise<Decision>;
  /** Settles `own`'s reservation; resolves (never rejects) once the store has answered or the failure is reported. */
  completed(own: Decision, args: readonly unknown[]): Promise<void>;
} {
  const open = new WeakMap<Decision, Reservation>();
  const direct = FloodgateLimiter.isOwn(limiter);
  const failed = (error: unknown): void =>
    warn(
      'settle-failed',
      `a request's settle failed (${error instanceof Error ? error.message : describeValue(error)}); its estimate stays counted until its window passes`,
    );
  const unsettled = (error: unknown): void => {
    failed(error);
    end();
  };
  // settle() rejecting is an event of the limiter already (engine/settle-failures.ts); the application's
  // settle throwing never reached it, so it is reported here, by a reservation that can (any limiter's may not).
  const threw = (reservation: Reservation, error: unknown): void => {
    (reservation as Partial<ReportingReservation>)[settleFailed]?.('threw');
    failed(error);
  };
  // Counted (completion.ts) until the store has answered, or the failure is reported.
  const settleAt = (reservation: Reservation, actual: unknown): Promise<void> => {
    begin();
    try {
      return reservation.settle(actual as Cost).then(end, unsettled);
    } catch (error) {
      unsettled(error); // a shared limiter's reservation whose settle() throws
      return DONE;
    }
  };
  return {
    async reserve(ids, cost, plan, address) {
      // A limiter createLimiter() made matches the lists' IP rules with the client's exact address too;
      // any other `limiter` (a wrapper of one) by its own reserve().
      const reservation = direct
        ? await (limiter as FloodgateLimiter)[reserveAt](ids, cost, plan, address)
        : await limiter.reserve(ids, plan === undefined ? { cost } : { cost, plan });
      // Only what the store counted has anything to settle: not an allow list's admission, nor the failure policy's.
      const { allowed, source } = reservation.decision;
      if (allowed && (source === 'redis' || source === 'memory')) open.set(reservation.decision, reservation);
      return reservation.decision;
    },
    completed(own, args) {
      const reservation = open.get(own);
      if (reservation === undefined) return DONE;
      open.delete(own);
      try {
        const actual = settle(...args);
        if (!isThenable(actual)) return settleAt(reservation, actual);
        // Counted while the application's settle answers: the store write begins before this ends.
        begin();
        return Promise.resolve(actual).then(
          (a) => {
            const written = settleAt(reservation, a);
            end();
            return written;
          },
          (error: unknown) => {
            threw(reservation, error);
            end();
          },
        );
      } catch (error) {
        threw(reservation, error);
        return DONE;
      }
    },
  };
}
