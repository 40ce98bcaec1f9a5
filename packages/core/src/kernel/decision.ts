import type { StoreError } from './errors';

/**
 * redis / memory: the store decided; cache: the block cache (a denial the store made earlier); fallback:
 * the failure policy; local: this process, without asking the store (see localDenial); list: the allow or
 * deny list (docs/lists.md), in this process.
 */
export type DecisionSource = 'redis' | 'memory' | 'cache' | 'fallback' | 'local' | 'list';
/**
 * unidentified: the HTTP layer could not tell who the client is, and `unidentified: 'deny'` says deny;
 * listed: an identifier or the client address is on the deny list.
 */
export type DenyReason = 'limit' | 'blocked' | 'store-unavailable' | 'unidentified' | 'listed';

/** One (identifier x rule) pair as the store saw it. */
export interface PairState {
  identifier: string;
  limit: number;
  windowMs: number;
  /** Units still available after this call (after consuming, when it consumed). */
  remaining: number;
  /** Time until this pair is fully replenished. */
  resetMs: number;
  /** Whether this pair alone admits the cost. */
  allowed: boolean;
  /** Time until this pair alone would admit the cost (0 when it does). */
  retryAfterMs: number;
  /** What the rule counts, when it is not requests (`unit: 'tokens'`, docs/budgets.md). */
  unit?: string;
}

export interface Decision {
  allowed: boolean;
  source: DecisionSource;
  reason?: DenyReason;
  /** The binding pair's identifier (or the blocked identifier). */
  identifier?: string;
  /** The binding pair's limit and window (Infinity and 0 when no rule applied to any identifier). */
  limit: number;
  windowMs: number;
  /** The binding pair's remaining units (0 when blocked). */
  remaining: number;
  /** Time until the binding pair is fully replenished. */
  resetMs: number;
  /**
   * When the binding pair is fully replenished, in ms since the epoch on the store's clock (Redis `TIME`):
   * the same instant for every decision of one window, whichever process or cache answered. Absent when
   * no rule state is known (a fallback or local decision).
   */
  resetAt?: number;
  /** 0 when allowed; else the largest wait over the denying pairs (a block's remaining time). */
  retryAfterMs: number;
  /**
   * Units this call asked for: the number given; with a cost per unit (docs/budgets.md), the cost in the
   * binding pair's unit.
   */
  cost: number;
  /** With rules of several units: the call's cost per unit (`{ requests: 1, tokens: 1200 }`). */
  costs?: Readonly<Record<string, number>>;
  states: PairState[];
  /** The reason given to block() when reason is 'blocked'. */
  blockReason?: string;
  /** Shadow mode: the decision the limiter would have enforced. */
  shadowDenied?: boolean;
  /** Why the store could not decide, when source is 'fallback'. */
  error?: StoreError;
}

/**
 * A denial made in this process without the store: a check that waited for room among its identifier's
 * units in flight until its deadline (reason 'limit'), or an unidentified client (reason 'unidentified').
 * No counts are known, so there are no states and no rate-limit numbers to report.
 */
export function localDenial(reason: DenyReason, identifier: string, retryAfterMs: number, cost: number): Decision {
  return {
    allowed: false,
    source: 'local',
    reason,
    identifier,
    limit: Infinity,
    windowMs: 0,
    remaining: 0,
    resetMs: 0,
    retryAfterMs,
    cost,
    states: [],
  };
}

/**
 * A decision of the allow or deny list (docs/lists.md): nothing counted, no rule applied. `identifier` is
 * what matched (`ip:<address>` for an IP rule).
 */
export function listDecision(allowed: boolean, identifier: string, cost: number): Decision {
  const decision: Decision = {
    allowed,
    source: 'list',
    identifier,
    limit: Infinity,
    windowMs: 0,
    remaining: allowed ? Infinity : 0,
    resetMs: 0,
    retryAfterMs: 0,
    cost,
    states: [],
  };
  if (!allowed) decision.reason = 'listed';
  return decision;
}
