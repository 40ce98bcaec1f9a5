import type { Decision, PairState } from '../kernel/decision';
import { shared } from '../kernel/state';
import { OldestKey, UseOrder, type Placed } from '../kernel/insertion-order';
import { DEFAULT_UNIT } from '../config/rules';

/** A cached manual block is asked about again at least this often: another process may lift it. */
export const BLOCK_RECHECK_MS = 1_000;

interface Entry extends Placed {
  /** Clock time until which the entry answers (a denial's retry time; a block's next re-check). */
  until: number;
  /** Clock time the denial was seen, to age the times in the decision it answers with. */
  seenAt: number;
  /**
   * The cost that was denied; only that cost is answered from the entry (a block denies every cost). With
   * rules of several units, the cost argument ('1:1200', scripts/units.ts): the same costs of every unit.
   */
  minCost: number | string;
  blocked: boolean;
  /**
   * Only known(), never lookup(): a denial under a lockout (the next must reach the script to count), or an
   * admission that left nothing for the next check of its cost (the store did not deny anything yet).
   */
  failureOnly: boolean;
  decision: Decision;
  state: PairState | undefined;
}

/*
 * Denials remembered in-process, per limiter and identifier, so a client that keeps hammering while
 * limited costs no Redis command until its retry time. What an entry means: "this cost does not fit for
 * this identifier under this limiter until `until`", exact because the store computed that time. Other
 * costs still go to Redis: a smaller one may fit, a larger one may need longer. A manual block denies every
 * cost, cost 0 included, but is re-checked every second.
 * What a check that cannot reach the store asks (known()) is wider: every denial, lockouts included, and an
 * identifier the store's last admission left with less than that check's cost, until its window replenishes.
 * Bounded LRU (Map insertion order); expiry on the limiter's clock: its runtime's monotonic one in production.
 */
export class BlockCache {
  private readonly entries = new Map<string, Entry>();
  /** Least recently used first (remembered or answered from), for the bound. */
  private readonly order = new UseOrder();
  private readonly oldest = new OldestKey(this.entries);

  constructor(
    readonly prefix: string,
    readonly name: string,
    private readonly max: number,
    private readonly now: () => number,
    /**
     * Answer lookups with blocks only, not with denials by the rules: with a lockout, every denial must
     * reach the script, which counts it toward the lockout (a lockout, once decided, is a block and is
     * cached). The denials are still remembered for known(): a failure must not admit a client Redis denied.
     */
    private readonly blocksOnly = false,
  ) {
    const ref = new WeakRef(this);
    this.ref = ref;
    live.add(ref);
    collected.register(this, ref, this);
  }

  private readonly ref: WeakRef<BlockCache>;

  /** A cached denial for a check of `ids` at `cost`, or undefined: ask the store. */
  lookup(ids: readonly string[], cost: number | string): Decision | undefined {
    // The clock is read only for an identifier the cache holds: most checks' have no entry (a read is a
    // call into Node's C++, on every check).
    let now = -1;
    let best: Entry | undefined;
    for (const id of ids) {
      const e = this.entries.get(id);
      if (e === undefined) continue;
      if (now < 0) now = this.now();
      if (e.until <= now) {
        this.entries.delete(id);
        continue;
      }
      if (e.failureOnly) continue;
      // Only the cost that was denied is answered from here: its retry time is exact. A smaller cost may
      // fit, and a larger one may need longer than the cached retry, so both ask the store.
      if (!e.blocked && cost !== e.minCost) continue;
      this.order.used(this.entries, id, e);
      if (!best || (e.blocked && !best.blocked) || (e.blocked === best.blocked && e.until > best.until)) best = e;
    }
    return best && this.answer(best, now, cost);
  }

  /**
   * Whether any of `ids` is known to be denied now, whatever the cost: what a check that could not reach
   * the store answers instead of its failure policy (an identifier known to be over its limit, or left with
   * nothing by its last admission, stays denied while the store is slow or failing). Does not touch the LRU
   * order.
   */
  known(ids: readonly string[], cost: number | string): Decision | undefined {
    const now = this.now();
    let best: Entry | undefined;
    for (const id of ids) {
      const e = this.entries.get(id);
      if (e !== undefined && e.until > now && (!best || e.until > best.until)) best = e;
    }
    return best && this.answer(best, now, cost);
  }

  /**
   * Remembers a denial the store made (never one made in shadow mode: the caller passes the real decision),
   * or an admission that left an identifier less than its cost (for known() only).
   */
  remember(decision: Decision, cost: number | string): void {
    if (decision.allowed) {
      // The common case costs one comparison: the binding pair's remaining is the least of them. With a
      // cost per unit, each pair against its own unit's.
      if (typeof cost === 'string' || decision.remaining < cost) this.exhausted(decision, cost);
      return;
    }
    if (decision.identifier === undefined) return;
    const now = this.now();
    if (decision.reason === 'blocked') {
      const until = now + Math.min(decision.retryAfterMs, BLOCK_RECHECK_MS);
      this.put(decision.identifier, {
        until,
        seenAt: now,
        minCost: 0,
        blocked: true,
        failureOnly: false,
        decision,
        state: undefined,
        placed: 0,
      });
      return;
    }
    if (decision.reason !== 'limit' || cost === 0 || decision.cost === 0) return;
    const longest = new Map<string, PairState>();
    for (const s of decision.states) {
      const prev = longest.get(s.identifier);
      if (!s.allowed && (!prev || s.retryAfterMs > prev.retryAfterMs)) longest.set(s.identifier, s);
    }
    for (const [id, state] of longest) {
      const prev = this.entries.get(id);
      if (prev?.blocked && prev.until > now) continue;
      const until = now + state.retryAfterMs;
      this.put(id, { until, seenAt: now, minCost: cost, blocked: false, failureOnly: this.blocksOnly, decision, state, placed: 0 });
    }
  }

  /**
   * An admission that left a pair less than `cost`: the next such check would be denied until the pair
   * replenishes, so a check that cannot reach the store meanwhile is denied too, not admitted by its policy.
   * Never replaces a live entry.
   */
  private exhausted(decision: Decision, cost: number | string): void {
    const now = this.now();
    for (const s of decision.states) {
      const own = typeof cost === 'number' ? cost : (decision.costs?.[s.unit ?? DEFAULT_UNIT] ?? 0);
      if (s.remaining >= own || s.resetMs <= 0) continue;
      const prev = this.entries.get(s.identifier);
      if (prev !== undefined && prev.until > now) continue;
      const state: PairState = { ...s, allowed: false, retryAfterMs: s.resetMs };
      this.put(s.identifier, {
        until: now + s.resetMs,
        seenAt: now,
        minCost: cost,
        blocked: false,
        failureOnly: true,
        decision,
        state,
        placed: 0,
      });
    }
  }

  evict(ids: readonly string[]): void {
    for (const id of ids) this.entries.delete(id);
  }

  /** Forgets every entry (resetPrefix, between tests). */
  clear(): void {
    this.entries.clear();
  }

  dispose(): void {
    this.entries.clear();
    live.delete(this.ref);
    collected.unregister(this);
  }

  get size(): number {
    return this.entries.size;
  }

  private put(id: string, entry: Entry): void {
    this.order.set(this.entries, id, entry);
    if (this.entries.size > this.max) this.entries.delete(this.oldest.take()!);
  }

  private answer(e: Entry, now: number, costArg: number | string): Decision {
    const aged = now - e.seenAt;
    // A cost per unit: the entry's own (the same costs, or a block, which denies any).
    const cost = typeof costArg === 'number' ? costArg : e.decision.cost;
    const left = (ms: number): number => Math.max(Math.ceil(ms - aged), 0);
    if (e.blocked) {
      const d = e.decision;
      return { ...d, source: 'cache', cost, retryAfterMs: left(d.retryAfterMs), resetMs: left(d.resetMs), states: [] };
    }
    const s = e.state!;
    const state: PairState = { ...s, resetMs: left(s.resetMs), retryAfterMs: left(s.retryAfterMs) };
    // With rules of several units, the other units' pairs as the store last saw them (aged), so a cached
    // denial reports every unit as the store's own denial did (the headers per unit, docs/budgets.md).
    const unit = s.unit ?? DEFAULT_UNIT;
    const others =
      e.decision.costs === undefined
        ? []
        : e.decision.states
            .filter((o) => (o.unit ?? DEFAULT_UNIT) !== unit)
            .map((o) => ({ ...o, resetMs: left(o.resetMs), retryAfterMs: left(o.retryAfterMs) }));
    return {
      allowed: false,
      source: 'cache',
      reason: 'limit',
      identifier: s.identifier,
      limit: s.limit,
      windowMs: s.windowMs,
      remaining: s.remaining,
      resetMs: state.resetMs,
      // The store's instant for this pair: the decision's own time plus the pair's reset, as it was then.
      resetAt: e.decision.resetAt === undefined ? undefined : e.decision.resetAt - e.decision.resetMs + s.resetMs,
      retryAfterMs: state.retryAfterMs,
      cost,
      states: others.length === 0 ? [state] : [state, ...others],
    };
  }
}

/**
 * Every block cache in this process, so reset() and unblock() evict from all the limiters they concern.
 * Weakly held: a limiter nobody references (one built per request and never closed) is collected with its
 * cache, instead of staying reachable from here forever (docs/security.md, "Unbounded memory").
 */
const live = shared('blockCaches', () => new Set<WeakRef<BlockCache>>());
const collected = shared('blockCaches.collected', () => new FinalizationRegistry<WeakRef<BlockCache>>((ref) => live.delete(ref)));

/** Evicts `ids` from the caches of every limiter with this prefix (and this name, when given). */
export function evictEverywhere(prefix: string, name: string | undefined, ids: readonly string[]): void {
  for (const ref of live) {
    const cache = ref.deref();
    if (cache !== undefined && cache.prefix === prefix && (name === undefined || cache.name === name)) cache.evict(ids);
  }
}

/** Empties the caches of every limiter with this prefix (resetPrefix). */
export function clearEverywhere(prefix: string): void {
  for (const ref of live) {
    const cache = ref.deref();
    if (cache !== undefined && cache.prefix === prefix) cache.clear();
  }
}

/** Block caches still reachable (for tests). */
export function liveBlockCaches(): number {
  return live.size;
}
