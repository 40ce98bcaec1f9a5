import type { Decision } from '../kernel/decision';
import { ArgumentError, ConfigError, describeValue } from '../kernel/errors';
import type { PlanState } from './plan';
import type { Refunds } from './refund';
import { atLeastOne, type CallCost } from './units';

/*
 * Reservations (docs/budgets.md): a check at an estimate, settled later at the actual cost. The check is
 * an ordinary check (it admits only when the estimate fits every rule, and counts it at once, so concurrent
 * reservations never overshoot); the settle gives back what the actual cost left of the estimate and
 * charges what it went past it, in one script call (scripts/settle.ts); cancel gives it all back (a
 * refund). Each of settle and cancel happens at most once, and only one of them: the receipts of the check
 * are forgotten before either is sent (refund.ts).
 *
 * A reservation counts at least 1 of every unit its plan counts (reservedCost): an estimate of 0 in a unit
 * would be admitted whatever that unit's count, so a unit already at or past its limit (a debt a settle
 * charged included) would never deny the "check first, charge after" pattern. The settle charges what was
 * used from there, so the 1 is never kept beyond what the actual cost says.
 */

/** A cost: one number for every rule, or one per unit the rules count (`{ requests: 1, tokens: 1200 }`). */
export type Cost = number | Readonly<Record<string, number>>;

export interface ReserveOptions {
  /** The estimate: units to count now (default 1), one number for every rule or a cost per unit. */
  cost?: Cost;
  /** Which of the limiter's plans applies; default the first. */
  plan?: string;
}

export interface Reservation {
  /** The check at the estimate: admitted (and counted) or denied (nothing counted, nothing to settle). */
  readonly decision: Decision;
  /**
   * Settles at the actual cost (one number or a cost per unit, as the estimate): less gives the difference
   * back, as refund() gives back (only what the windows or buckets still hold from this check; never after
   * a reset); more charges the excess past the limit, and the identifiers stay denied until it is paid off.
   * True when settled; false when there is nothing to settle: a denial, a decision the store did not count
   * (the failure policy, an allow list), or a reservation settled or cancelled already. An actual cost that
   * is not one (undefined and null included) rejects with an ArgumentError and leaves the estimate counted;
   * every rejection is also a 'settle-failed' event of the limiter.
   */
  settle(actual: Cost): Promise<boolean>;
  /** Gives the whole estimate back (a refund). True when sent; false as for settle(). */
  cancel(): Promise<boolean>;
}

/** A reservation's estimate as counted: at least 1 of every unit (see the top of the file), read already. */
export const reservedCost = (estimate: CallCost): CallCost => atLeastOne(estimate);

/** Reservations need the refundable script: its receipts are what a settle gives back from. */
export function assertReservable(refunds: boolean, name: string): void {
  if (!refunds) {
    throw new ConfigError(
      'refunds',
      `reserve() needs a limiter made with refunds: true (limiter '${name}'): a settle gives back from the receipts only the refundable script answers`,
    );
  }
}

/** The reservation of `decision`, settled through `refunds`. */
export function reservation(decision: Decision, plan: PlanState, refunds: Refunds): Reservation {
  return {
    decision,
    // The actual cost is validated (an ArgumentError rejects) before anything is forgotten. Nothing
    // (undefined, null) is no actual cost: not the default of 1 a check's cost has.
    settle: async (actual) => {
      if (actual === undefined || actual === null) {
        throw new ArgumentError(`settle(actual) needs the actual cost (a number, or a cost per unit); got ${describeValue(actual)}`);
      }
      return refunds.settle(decision, plan.planner.cost(actual, 'settle(actual)'));
    },
    cancel: async () => refunds.refund(decision),
  };
}
