import { DeadlineQueue, type Timers } from './deadlines';
import { afterTurn, realNow, realTimeout, realTimer } from './real-timers';
import { shared } from './state';

/*
 * Operational time behind one seam (docs/design.md, "Operational time"): what a limiter, its store and their
 * guards read of time that is not a rule's window. Deadlines (stores/guarded-call.ts, the wait for a first
 * connection and for room among units in flight), the circuit breaker's probe interval, the end of a turn that
 * batches and write coalescing wait for, the refreshes of overrides, latency and health all take their
 * clock, their timers and their deadline queue from one Runtime. A limiter has the real one unless its
 * maker gives another: Floodgate's own tests run a limiter on a virtual runtime (kernel/virtual-runtime.ts),
 * where time moves only when the test advances it.
 *
 * Rule time is not here: windows run on Redis TIME, or on the limiter's `clock` (its test mode), or else on
 * the runtime's wall clock (the in-memory store, which is Date.now() on the real runtime).
 */

export interface Runtime {
  /** Monotonic time in ms: deadlines, latency, the breaker's interval. */
  readonly now: () => number;
  /** Time in ms since the epoch: what health reports, and the in-memory store's time without a `clock`. */
  readonly wall: () => number;
  /** Runs fn once at the end of this turn of the event loop (its check phase). */
  readonly afterTurn: (fn: () => void) => void;
  /** Runs fn once, ms from now; the function returned cancels it. An `unref` timer keeps no process alive. */
  readonly timeout: (fn: () => void, ms: number, unref?: boolean) => () => void;
  /** Many deadlines on one timer per duration, on this runtime's timers (kernel/deadlines.ts). */
  readonly deadlines: DeadlineQueue;
}

const realTimers: Timers = { now: realNow, timer: realTimer };

/**
 * The event loop's own time, whatever fake clock an application's tests install (kernel/real-timers.ts): the
 * runtime of every limiter but those of Floodgate's own tests. One for the process, shared by every copy of
 * this package it loads, with the one deadline queue (kernel/deadlines.ts: equal deadlines expire in the
 * order they were set, whichever limiter set them).
 */
export const realRuntime: Runtime = shared('realRuntime', () => ({
  now: realNow,
  wall: () => Date.now(),
  afterTurn,
  timeout: realTimeout,
  deadlines: shared('deadlines', () => new DeadlineQueue(realTimers)),
}));
