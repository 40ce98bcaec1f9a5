import { StoreError } from '../kernel/errors';
import { localDenial, type Decision } from '../kernel/decision';
import { adapterOf } from '../stores/clients';
import { privateMemoryStore, type MemoryStore } from '../stores/memory';
import type { ResolvedOptions } from './options';
import type { Events } from './events';
import type { HealthRecorder } from './health';
import type { OpenAccount } from './open-account';
import { cacheCost, decodeCall, nowOf, type Call } from './plan';
import { OutageWarning } from './outage-warning';

/**
 * A limiter's failure policy (the `failure` option): what a check answers when the store did not, and what
 * the limiter remembers of the failure (the last connection-level fault, and whether it warned already).
 */
export class StoreFailures {
  /** The last connection-level failure (timeout, unavailable, circuit open), until the store answers again. */
  fault: StoreError | undefined;
  /** What the limiter says while the store fails it (outage-warning.ts). */
  private readonly outage: OutageWarning;
  /** The `failure: 'local'` limiter, made on first use. */
  private localStore: MemoryStore | undefined;

  constructor(
    private readonly opts: ResolvedOptions,
    private readonly recorder: HealthRecorder,
    private readonly events: Events,
    /** With `failure: 'open'` on a remote store: what the policy admitted, per identifier (open-account.ts). */
    private readonly open: OpenAccount | undefined,
  ) {
    const client = opts.redis === undefined ? undefined : adapterOf(opts.redis);
    this.outage = new OutageWarning(opts.name, opts.failure, opts.logger, opts.runtime.now, client);
  }

  /** The store answered: the failure is over (the next one warns again). */
  answered(): void {
    this.outage.answered();
    this.fault = undefined;
  }

  /**
   * A check that waited for room among its identifiers' units in flight and was never sent: it gave up at
   * its deadline (`gaveUp`), or was let in with no time left. The checks ahead of it held the identifier's
   * whole capacity. When those failed (the store is failing), 'closed' and 'local' apply as for them, and
   * 'open' denies: they took the policy's admissions already. Otherwise a check that gave up is denied (that
   * many units were being decided), and one let in too late failed in this process's own backlog: overload.
   */
  notSent(call: Call, gaveUp: boolean): Decision {
    const fault = this.fault;
    if (fault !== undefined && this.opts.failure !== 'open') {
      return this.fallback(call, new StoreError(fault.kind, `not sent: ${fault.message.replace(/^floodgate: /, '')}`), 'c');
    }
    if (fault !== undefined || gaveUp) return this.overCapacity(call);
    return this.fallback(call, new StoreError('overload', `not sent: its ${this.opts.timeoutMs} ms went waiting in this process`), 'c');
  }

  /** Checks that waited for room among an identifier's units in flight until their deadline: denied. */
  private overCapacity({ ids, cost, plan }: Call): Decision {
    const id = ids.find((i) => plan.planner.capacity(i) !== Infinity) ?? ids[0]!;
    return localDenial('limit', id, this.opts.timeoutMs, cost);
  }

  fallback(call: Call, error: StoreError, op: 'c' | 'p'): Decision {
    const failure = this.opts.failure;
    if (error.kind !== 'overload' && error.kind !== 'reply') this.fault = error;
    this.recorder.failed(error);
    if (this.events.active) this.events.storeError(error, failure);
    this.outage.failed(error);
    // An identifier known to be over its limit stays denied, whatever the policy (docs/security.md).
    const known = call.plan.cache?.known(call.ids, cacheCost(call));
    if (known) return { ...known, error };
    // Overload is not an outage: Redis was answering, but this process had sent more than it could answer
    // in time. Admitting by 'open' would let load buy admissions, so overload sheds the request instead
    // (503 with Retry-After in the adapters), as 'closed' does; 'local' decides in process as it always does.
    const policy = error.kind === 'overload' && failure === 'open' ? 'closed' : failure;
    if (policy === 'local') {
      this.localStore ??= privateMemoryStore(this.opts.prefix, this.opts.memoryMaxKeys);
      const reply = this.localStore.run(call.plan.program, call.keys, call.argv, { now: nowOf(this.opts), budgetMs: Infinity });
      return { ...decodeCall(call, reply, 'fallback'), error };
    }
    const allowed = policy === 'open';
    // 'open' admits, but never more than a rule's capacity per identifier and window from this process: a
    // flood's own checks would otherwise be admitted again at every deadline, uncounted (open-account.ts).
    const none = allowed ? this.open?.admit(call, op) : undefined;
    if (none !== undefined) return { ...none, error };
    const decision: Decision = {
      allowed,
      source: 'fallback',
      limit: Infinity,
      windowMs: 0,
      remaining: Infinity,
      resetMs: 0,
      retryAfterMs: allowed ? 0 : Math.min(1000, this.opts.timeoutMs * 4),
      cost: call.cost,
      states: [],
      error,
    };
    if (!allowed) decision.reason = 'store-unavailable';
    return decision;
  }
}
