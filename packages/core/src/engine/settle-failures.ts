import { ArgumentError } from '../kernel/errors';
import type { Events, SettleFailure } from './events';
import type { Reservation } from './reserve';

/*
 * Failed settles, counted (docs/budgets.md, docs/operating.md): every settle of a reservation that fails
 * leaves its estimate counted, and is one 'settle-failed' event of the limiter, whoever asked for it (the
 * application calling settle(), or an adapter's `settle` option), so an operator sees how often it happens
 * (@floodgate/metrics counts them).
 */

/**
 * Internal: `reservation[settleFailed](reason)` reports a settle that never reached settle(): the HTTP
 * layer's, when the application's `settle` threw or rejected. A failure of settle() itself reports itself.
 */
export const settleFailed: unique symbol = Symbol('floodgate.settleFailed');

export interface ReportingReservation extends Reservation {
  [settleFailed](reason: SettleFailure): void;
}

/** `r`, each of whose failed settles is a 'settle-failed' event of `events`. */
export function reportingFailures(r: Reservation, events: Events): ReportingReservation {
  const { decision } = r;
  const report = (reason: SettleFailure): void => {
    if (!events.active) return;
    events.settleFailed([...new Set(decision.states.map((s) => s.identifier))], decision.cost, reason);
  };
  return {
    decision,
    settle: (actual) =>
      r.settle(actual).catch((error: unknown) => {
        report(error instanceof ArgumentError ? 'invalid' : 'store');
        throw error;
      }),
    cancel: () => r.cancel(),
    [settleFailed]: report,
  };
}
