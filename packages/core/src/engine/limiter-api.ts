import type { Decision } from '../kernel/decision';
import type { Rule } from '../config/rules';
import type { ResolvedOptions } from './options';
import type { AcquireOptions } from './acquire';
import type { ListsInput } from './lists';
import type { EventListener } from './events';
import type { LimiterHealth } from './health';
import type { LimiterOverrides } from './overrides';
import type { Cost, Reservation, ReserveOptions } from './reserve';
import type { BlockOptions } from './admin';

/* What a limiter offers its caller (createLimiter's answer; limiter.ts implements it). */

export interface CheckOptions {
  /**
   * Units this call consumes (a non-negative integer; default 1), for every rule; or, for rules that count
   * other units (`unit: 'tokens'`), a cost per unit: `{ requests: 1, tokens: 1200 }`, naming every unit the
   * plan's rules count (docs/budgets.md). Cost 0 consumes nothing.
   */
  cost?: Cost;
  /** Which of the limiter's plans (`limits: { free: [...], pro: [...] }`) applies; default the first. */
  plan?: string;
}

export interface Limiter {
  readonly name: string;
  readonly prefix: string;
  readonly algorithm: string;
  /** The default plan's rules (the only plan's, when `limits` names none). */
  readonly rules: readonly Rule[];
  /** The plan names of `limits: { free: [...], pro: [...] }`, the default first; [] when it names none. */
  readonly plans: readonly string[];
  /** A plan's rules (the default plan's without a name); throws an ArgumentError for an unknown plan. */
  rulesOf(plan?: string): readonly Rule[];
  readonly failure: ResolvedOptions['failure'];
  readonly mode: ResolvedOptions['mode'];
  /**
   * Per-identifier overrides (the `overrides` option, docs/overrides.md): a plan or rules of their own for one
   * identifier, which every check whose identifiers include it uses (the first such identifier's, in the
   * check's order), before the check's own `plan`.
   */
  readonly overrides: LimiterOverrides;
  /** Checks every rule for every identifier in one store call; consumes only if all admit the cost. */
  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision>;
  /** Whether refund() can give anything back (the `refunds` option). */
  readonly refunds: boolean;
  /**
   * Gives back exactly what an admitted check of this limiter consumed, to the windows or buckets it took
   * it from while they still hold it, in one store call. At most once per decision: true when it was
   * sent, false when there is nothing to give back (a denial, a cached or failure-policy decision, a
   * peek, another limiter's decision, one already refunded, or a limiter without `refunds: true`).
   */
  refund(decision: Decision): Promise<boolean>;
  /**
   * A check at an estimate, to settle at the actual cost later (docs/budgets.md): admitted only when the
   * estimate fits every rule, and counted at once. Needs `refunds: true` (else it rejects with a
   * ConfigError).
   */
  reserve(identifiers: string | readonly string[], options?: ReserveOptions): Promise<Reservation>;
  /** The same decision as check(), consuming nothing. */
  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision>;
  /** Forgets this limiter's counts for these identifiers (manual blocks stay: see unblock). */
  reset(identifiers: string | readonly string[]): Promise<void>;
  /** Denies every check of this identifier, in every limiter with this prefix, for `duration`. */
  block(identifier: string, options: BlockOptions): Promise<void>;
  /** Lifts a block (block()'s or a lockout's) and forgets this limiter's lockout escalation for the identifier. */
  unblock(identifier: string): Promise<void>;
  /** Waits (sleeping, first come first served) until a check passes; gives up after maxWaitMs or on abort. */
  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision>;
  /**
   * Replaces the allow and/or deny list (a list left out stays as it is), validated and compiled as at
   * construction: a malformed entry throws a ConfigError and changes nothing. Takes effect for the next check.
   */
  setLists(lists: ListsInput): void;
  /** Calls `listener` with every event (as the `onEvent` option does) until the returned function is called. */
  subscribe(listener: EventListener): () => void;
  /**
   * The store's health for a readiness probe or a dashboard (health.ts). When the limiter has not heard from
   * its store for a second, it first probes it (a peek of a reserved identifier, within `timeoutMs`), unless
   * `{ probe: false }`. Never rejects.
   */
  health(options?: { probe?: boolean }): Promise<LimiterHealth>;
  close(): Promise<void>;
}
