import type { Decision, PairState } from '../kernel/decision';
import { DEFAULT_UNIT } from '../config/rules';
import type { HeaderList } from './header-list';

/*
 * Headers per unit (docs/budgets.md, "Headers"): with rules of several units, the draft-8 RateLimit item
 * and the AI API dialect ('openai': x-ratelimit-limit-requests, x-ratelimit-remaining-tokens, ...) report
 * each unit's binding rule, not the one pair the decision binds on.
 */

/** One unit's binding pair of a decision, with what a header reports of it. */
export interface UnitBinding {
  readonly unit: string;
  readonly state: PairState;
  /** Whole units left (0 while blocked). */
  readonly remaining: number;
  /** Until the pair is fully replenished (a block's time when longer). */
  readonly resetMs: number;
}

/**
 * Whether `a` binds tighter than `b` among one unit's pairs, as the decision's own binding pair is chosen
 * (scripts/reply.ts): a denying pair beats an admitting one; among denying pairs the longest retry; among
 * admitting pairs the least remaining, then the longest to refill.
 */
function tighter(a: PairState, b: PairState): boolean {
  if (a.allowed !== b.allowed) return !a.allowed;
  if (!a.allowed) return a.retryAfterMs > b.retryAfterMs;
  return a.remaining < b.remaining || (a.remaining === b.remaining && a.resetMs > b.resetMs);
}

/**
 * Each unit's binding pair, in the order of `units` (a unit no pair of the decision counts is left out).
 * A blocked decision reports the blocked identifier's pairs, at 0 remaining until the block ends.
 */
export function unitBindings(decision: Decision, units: readonly string[]): UnitBinding[] {
  const blocked = decision.reason === 'blocked';
  const out: UnitBinding[] = [];
  for (const unit of units) {
    let best: PairState | undefined;
    for (const s of decision.states) {
      if ((s.unit ?? DEFAULT_UNIT) !== unit || (blocked && s.identifier !== decision.identifier)) continue;
      if (best === undefined || tighter(s, best)) best = s;
    }
    if (best === undefined) continue;
    out.push({
      unit,
      state: best,
      remaining: blocked ? 0 : Math.max(0, Math.floor(best.remaining)),
      resetMs: blocked ? Math.max(decision.resetMs, best.resetMs) : best.resetMs,
    });
  }
  return out;
}

/**
 * A duration as OpenAI's API writes its x-ratelimit-reset-* values, Go's time.Duration format at
 * millisecond precision: `20ms` under a second, else `1s`, `1.5s`, `6m0s`, `1h0m0s` (and `0s`). OpenAI's
 * and Anthropic-style SDKs parse these for their back-off.
 */
export function durationText(ms: number): string {
  const total = Number.isFinite(ms) ? Math.max(0, Math.ceil(ms)) : 0;
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = `${(total % 60_000) / 1000}s`;
  if (h > 0) return `${h}h${m}m${s}`;
  return m > 0 ? `${m}m${s}` : s;
}

/**
 * The AI API dialect: per unit, `x-ratelimit-limit-<unit>`, `x-ratelimit-remaining-<unit>` and
 * `x-ratelimit-reset-<unit>` of its binding rule. Each holds one value, so with several limiters on one
 * response a unit's headers are given only when this decision binds tighter in that unit than `previous`
 * (the tightest decision of the limiters that ran before), or `previous` counts nothing of it.
 */
export function unitDialectHeaders(units: readonly string[], decision: Decision, previous: Decision | undefined): HeaderList {
  const set: HeaderList = [];
  const before = previous === undefined ? [] : unitBindings(previous, units);
  for (const b of unitBindings(decision, units)) {
    const p = before.find((x) => x.unit === b.unit);
    if (p !== undefined && !(p.state.allowed !== b.state.allowed ? !b.state.allowed : b.remaining < p.remaining)) continue;
    set.push(
      [`x-ratelimit-limit-${b.unit}`, String(b.state.limit)],
      [`x-ratelimit-remaining-${b.unit}`, String(b.remaining)],
      [`x-ratelimit-reset-${b.unit}`, durationText(b.resetMs)],
    );
  }
  return set;
}
