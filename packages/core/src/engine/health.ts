import type { StoreError, StoreErrorKind } from '../kernel/errors';
import type { Store } from '../stores/types';

/*
 * limiter.health() (docs/operating.md): what a readiness probe or a dashboard asks of a limiter. The
 * limiter records each store call's round trip and the last store error here; the report reads them.
 * Recording is a typed-array write per call: nothing is allocated on the request path.
 */

export type HealthStatus = 'ok' | 'degraded' | 'down';

export interface LimiterHealth {
  /**
   * 'down': the store cannot be reached (its circuit breaker is open, or the last call failed for want of a
   * connection or an answer in time); 'degraded': it answers, but an error other than a lost connection came
   * within the last minute (overload, an error reply), or at least 3 of its last 256 answered calls took over
   * half the deadline (its p99 round trip, once 256 have been answered); 'ok' otherwise. One slow call, such
   * as the first one waiting for the connection, does not make it 'degraded'. The in-memory store is always 'ok'.
   */
  status: HealthStatus;
  store: 'redis' | 'memory';
  /** The store client's circuit breaker ('none' for the in-memory store). */
  breaker: 'closed' | 'open' | 'none';
  /** Round trips of the last (up to) 256 store calls that were answered, in ms; undefined before the first. */
  latencyMs: { p50: number; p90: number; p99: number; max: number; samples: number } | undefined;
  /** The last store error, with when it happened (ms since the epoch). */
  lastError: { kind: StoreErrorKind; message: string; at: number } | undefined;
  /** When the store last answered (ms since the epoch); undefined before the first answer. */
  lastOkAt: number | undefined;
  /** Whether this report sent a probe (a peek of a reserved identifier) because the limiter had been idle. */
  probed: boolean;
}

const SAMPLES = 256;
/** An error this recent makes a limiter that answers 'degraded'. */
const RECENT_MS = 60_000;
/**
 * This many round trips over half the deadline make it 'degraded': the p99 of a full window of 256, and the
 * same count when fewer have been answered (where the p99 would be the slowest call alone).
 */
const SLOW_CALLS = 3;

export class HealthRecorder {
  private readonly rtt = new Float64Array(SAMPLES);
  private count = 0;
  private lastError: LimiterHealth['lastError'];
  lastOkAt: number | undefined;

  /** `wall`: the limiter's runtime's wall clock (kernel/runtime.ts), ms since the epoch. */
  constructor(readonly wall: () => number) {}

  answered(ms: number): void {
    this.rtt[this.count % SAMPLES] = ms;
    this.count++;
    this.lastOkAt = this.wall();
  }

  failed(error: StoreError): void {
    this.lastError = { kind: error.kind, message: error.message, at: this.wall() };
  }

  /** The report, given whether the store is unreachable right now and the limiter's deadline. */
  report(remote: boolean, breakerOpen: boolean | undefined, unreachable: boolean, timeoutMs: number, probed: boolean): LimiterHealth {
    const n = Math.min(this.count, SAMPLES);
    const sorted = Array.from(this.rtt.subarray(0, n)).sort((a, b) => a - b);
    const at = (q: number): number => Math.round(sorted[Math.min(n - 1, Math.floor(q * n))]! * 100) / 100;
    const latencyMs = n === 0 ? undefined : { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1), samples: n };
    let status: HealthStatus = 'ok';
    if (remote) {
      const recent = this.lastError !== undefined && this.wall() - this.lastError.at < RECENT_MS;
      if (breakerOpen === true || unreachable) status = 'down';
      else if (recent || sorted.filter((ms) => ms > timeoutMs / 2).length >= SLOW_CALLS) status = 'degraded';
    }
    return {
      status,
      store: remote ? 'redis' : 'memory',
      breaker: breakerOpen === undefined ? 'none' : breakerOpen ? 'open' : 'closed',
      latencyMs,
      lastError: this.lastError && { ...this.lastError },
      lastOkAt: this.lastOkAt,
      probed,
    };
  }
}

/** What health() peeks at to probe an idle store (a peek consumes nothing, whoever else uses the identifier). */
export const HEALTH_IDENTIFIER = '~floodgate:health';

/**
 * limiter.health(): when the limiter has not heard from its store for a second, it first probes it with
 * `peek(HEALTH_IDENTIFIER)` (unless `{ probe: false }`), then reports. `unreachable` is read after the probe.
 */
export async function limiterHealth(
  recorder: HealthRecorder,
  store: Store,
  timeoutMs: number,
  peek: (identifier: string) => Promise<unknown>,
  unreachable: () => boolean,
  options: { probe?: boolean } | undefined,
): Promise<LimiterHealth> {
  const probe = options?.probe ?? true;
  let probed = false;
  const idleMs = recorder.wall() - (recorder.lastOkAt ?? 0);
  if (probe && store.remote && idleMs > 1_000) {
    probed = true;
    // A real call of this limiter's own script, consuming nothing: connection, ACL and scripts at once.
    await peek(HEALTH_IDENTIFIER).catch(() => undefined);
  }
  const breaker = (store as { breakerOpen?: boolean }).breakerOpen;
  return recorder.report(store.remote, breaker, unreachable(), timeoutMs, probed);
}
