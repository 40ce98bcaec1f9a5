import { realNow } from '../kernel/real-timers';
import { StoreError } from '../kernel/errors';
import { shared } from '../kernel/state';

/** After this many consecutive connection-level failures, checks stop sending and go straight to the policy. */
export const BREAKER_THRESHOLD = 5;
/** While open, one probe at most this often (nothing piles up on a paused Redis). */
export const PROBE_INTERVAL_MS = 250;

/*
 * A circuit breaker in front of one Redis client, shared by every limiter on it. The store already
 * refuses to send on a dropped connection; this covers the case it cannot see: a connection that looks
 * ready but answers nothing (a paused, frozen or partitioned server). Without it every check would park
 * one more script in the socket, to be run (and counted) long after its caller got the policy's answer.
 *
 * Only connection-level faults count (docs/security.md, "Self-inflicted fail-open"): a connection error,
 * or a deadline that passed with no reply at all from the server since the command was sent. An error
 * reply (OOM, READONLY, a script error in one limiter) proves the server is there, and a deadline that
 * passed while other replies kept arriving is this process's own backlog: neither opens the breaker, so
 * one client's expensive checks cannot fail open every limiter sharing the connection.
 *
 * Closed: every call is sent. Open: calls are refused without sending, except one probe at most every
 * PROBE_INTERVAL_MS with no other probe in flight; any reply closes the breaker.
 */
export class CircuitBreaker {
  private failures = 0;
  private open = false;
  private probing = false;
  private lastProbeAt = 0;

  constructor(
    private readonly threshold = BREAKER_THRESHOLD,
    private readonly probeIntervalMs = PROBE_INTERVAL_MS,
    // Its runtime's clock (kernel/runtime.ts): real time by default, even under a test's fake timers
    // (kernel/real-timers.ts), so an open breaker still probes again.
    private readonly now: () => number = realNow,
  ) {}

  get isOpen(): boolean {
    return this.open;
  }

  /**
   * Whether a command may be sent now: throws a `circuit-open` StoreError when not; returns true when this
   * send is the probe (pass that to the outcome method you call later).
   */
  admit(): boolean {
    if (!this.open) return false;
    const now = this.now();
    if (this.probing || now - this.lastProbeAt < this.probeIntervalMs) {
      throw new StoreError('circuit-open', 'Redis circuit is open after repeated failures; not sending');
    }
    this.probing = true;
    this.lastProbeAt = now;
    return true;
  }

  /** The server answered (a value or an error reply): the connection works. */
  succeeded(probe: boolean): void {
    if (probe) this.probing = false;
    this.failures = 0;
    this.open = false;
  }

  /** A connection-level fault: counts towards opening. */
  failed(probe: boolean): void {
    if (probe) this.probing = false;
    if (++this.failures >= this.threshold && !this.open) {
      this.open = true;
      this.lastProbeAt = this.now();
    }
  }

  /** Neither: the outcome says nothing about the connection (a deadline passed in this process's own backlog). */
  released(probe: boolean): void {
    if (probe) this.probing = false;
  }
}

/** Per client: its breaker, and how many of Floodgate's commands it has answered (a reply or an error reply). */
export interface ClientHealth {
  readonly breaker: CircuitBreaker;
  replies: number;
}

// 'clientHealth2': the layout changed (a reply count, where 'clientHealth' kept a time): a copy of an older
// version in the same process keeps its own (kernel/state.ts).
const health = shared('clientHealth2', () => new WeakMap<object, ClientHealth>());

/**
 * One breaker per client, shared by every limiter on it: a dead Redis is dead for all of them. `now`: the
 * clock of its probe interval (the runtime's of the first store on the client).
 */
export function healthOf(client: object, now: () => number = realNow): ClientHealth {
  let h = health.get(client);
  if (h === undefined) {
    h = { breaker: new CircuitBreaker(BREAKER_THRESHOLD, PROBE_INTERVAL_MS, now), replies: 0 };
    health.set(client, h);
  }
  return h;
}
