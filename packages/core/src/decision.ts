import type { Reply } from './algorithms/frame';
import type { StoreError } from './errors';
import type { Rule } from './rules';

export type DecisionSource = 'redis' | 'memory' | 'cache' | 'fallback';
export type DenyReason = 'limit' | 'blocked' | 'store-unavailable';

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
  /** 0 when allowed; else the largest wait over the denying pairs (a block's remaining time). */
  retryAfterMs: number;
  cost: number;
  states: PairState[];
  /** The reason given to block() when reason is 'blocked'. */
  blockReason?: string;
  /** Shadow mode: the decision the limiter would have enforced. */
  shadowDenied?: boolean;
  /** Why the store could not decide, when source is 'fallback'. */
  error?: StoreError;
}

/** Reads the frame's reply (see algorithms/frame.ts) into a Decision. */
export function decodeReply(
  reply: Reply,
  ids: readonly string[],
  ruleLists: readonly (readonly number[])[],
  rules: readonly Rule[],
  cost: number,
  source: DecisionSource,
): Decision {
  const states: PairState[] = [];
  let p = 3;
  let blockMs = 0;
  let blockedId: string | undefined;
  let blockReason = '';
  for (const id of ids) {
    const ms = Number(reply[p]);
    if (ms > blockMs) {
      blockMs = ms;
      blockedId = id;
      blockReason = String(reply[p + 1]);
    }
    p += 2;
  }
  ids.forEach((identifier, i) => {
    for (const j of ruleLists[i]!) {
      const rule = rules[j]!;
      const retryAfterMs = Number(reply[p + 2]);
      states.push({
        identifier,
        limit: rule.limit,
        windowMs: rule.windowMs,
        remaining: Number(reply[p]),
        resetMs: Number(reply[p + 1]),
        allowed: retryAfterMs === 0,
        retryAfterMs,
      });
      p += 3;
    }
  });

  if (blockedId !== undefined) {
    const own = leastRemaining(states.filter((s) => s.identifier === blockedId));
    return {
      allowed: false, source, reason: 'blocked', identifier: blockedId,
      limit: own?.limit ?? Infinity, windowMs: own?.windowMs ?? 0, remaining: 0,
      resetMs: Math.max(blockMs, own?.resetMs ?? 0), retryAfterMs: blockMs, cost, states, blockReason,
    };
  }
  const allowed = reply[1] === 1 || reply[1] === '1';
  const binding = allowed ? leastRemaining(states) : longestRetry(states);
  if (binding === undefined) {
    return { allowed, source, limit: Infinity, windowMs: 0, remaining: Infinity, resetMs: 0, retryAfterMs: 0, cost, states };
  }
  const decision: Decision = {
    allowed, source, identifier: binding.identifier, limit: binding.limit, windowMs: binding.windowMs,
    remaining: binding.remaining, resetMs: binding.resetMs, retryAfterMs: allowed ? 0 : binding.retryAfterMs, cost, states,
  };
  if (!allowed) decision.reason = 'limit';
  return decision;
}

/** The allowed binding pair: least remaining; on a tie, the one that takes longest to refill. */
function leastRemaining(states: readonly PairState[]): PairState | undefined {
  let best: PairState | undefined;
  for (const s of states) {
    if (!best || s.remaining < best.remaining || (s.remaining === best.remaining && s.resetMs > best.resetMs)) best = s;
  }
  return best;
}

/** The denied binding pair: the denying pair with the largest retry time. */
function longestRetry(states: readonly PairState[]): PairState | undefined {
  let best: PairState | undefined;
  for (const s of states) {
    if (!s.allowed && (!best || s.retryAfterMs > best.retryAfterMs)) best = s;
  }
  return best;
}
