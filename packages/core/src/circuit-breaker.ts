import { StoreError } from './errors';

/** After this many consecutive timeouts or errors, checks stop sending and go straight to the policy. */
export const BREAKER_THRESHOLD = 5;
/** While open, one probe at most this often (the bound: nothing piles up on a paused Redis). */
export const PROBE_INTERVAL_MS = 250;

/*
 * A circuit breaker in front of one Redis client. usable() in RedisStore already refuses to send on a
 * dropped connection; this covers the case it cannot see: a connection that looks ready but answers
 * nothing (a paused, frozen or overloaded server). Without it every check would park one more script
 * in the socket, to be run (and counted) long after its caller got the policy's answer.
 *
 * Closed: every call is sent. Open: calls are refused without sending, except one probe at most every
 * PROBE_INTERVAL_MS with no other probe in flight; any success closes the breaker.
 */
export class CircuitBreaker {
  private failures = 0;
  private open = false;
  private probing = false;
  private lastProbeAt = 0;

  constructor(
    private readonly threshold = BREAKER_THRESHOLD,
    private readonly probeIntervalMs = PROBE_INTERVAL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get isOpen(): boolean {
    return this.open;
  }

  /** Runs `send` unless the breaker is open and it is not time to probe; records how it went. */
  async call<T>(send: () => Promise<T>): Promise<T> {
    const probe = this.open;
    if (probe) {
      const now = this.now();
      if (this.probing || now - this.lastProbeAt < this.probeIntervalMs) {
        throw new StoreError('circuit-open', 'Redis circuit is open after repeated failures; not sending');
      }
      this.probing = true;
      this.lastProbeAt = now;
    }
    try {
      const result = await send();
      this.failures = 0;
      this.open = false;
      return result;
    } catch (err) {
      if (++this.failures >= this.threshold && !this.open) {
        this.open = true;
        this.lastProbeAt = this.now();
      }
      throw err;
    } finally {
      if (probe) this.probing = false;
    }
  }
}

const breakers = new WeakMap<object, CircuitBreaker>();

/** One breaker per client, shared by every limiter on it: a dead Redis is dead for all of them. */
export function breakerFor(client: object): CircuitBreaker {
  let breaker = breakers.get(client);
  if (breaker === undefined) {
    breaker = new CircuitBreaker();
    breakers.set(client, breaker);
  }
  return breaker;
}
