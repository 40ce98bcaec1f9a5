import type { Program } from '../scripts/compiler';
import type { Algorithm, FrameStorage } from '../scripts/types';
import { runFrame } from '../scripts/frame';
import { giveBackTwin } from '../scripts/incarnation';
import { runSettle } from '../scripts/settle';
import type { Reply } from '../scripts/reply';
import type { RunContext, Store } from './types';
import { isBlockKey } from '../scripts/keys';
import { indexTwin } from '../scripts/block-index';
import { shared } from '../kernel/state';
import { byPrefix } from '../kernel/by-prefix';
import { OldestKey, UseOrder, type Placed } from '../kernel/insertion-order';

/** Default for `memory.maxKeys`: identifiers whose state one in-memory store (or `failure: 'local'`) keeps. */
export const DEFAULT_MEMORY_MAX_KEYS = 100_000;

interface Entry extends Placed {
  value: unknown;
  expiresAt: number;
}

/**
 * The in-memory store: the algorithms' JavaScript twins over Maps with per-key expiry. Time is the caller's
 * (`now`), so an injected clock drives expiry too.
 *
 * Bounded (docs/security.md, "Unbounded memory"): identifiers are often chosen by clients (IPs, user
 * names on a login form), so state keys live in an LRU of at most `maxKeys` entries; past it the least
 * recently used is forgotten, which can only under-limit that identifier. Block keys (set by block(), never
 * by a client's own traffic) are kept apart, so a flood of new identifiers can never evict a block; they are
 * bounded by `maxKeys` too, dropping the oldest block first. Expired entries are dropped when read and by a
 * sweep whose cost is amortised over writes.
 */
export class MemoryStore implements Store, FrameStorage {
  readonly source = 'memory' as const;
  readonly remote = false;
  private readonly states = new Map<string, Entry>();
  private readonly blocks = new Map<string, Entry>();
  /** Each map least recently used first (a state read or written, a block written), for the bound. */
  private readonly stateOrder = new UseOrder();
  private readonly blockOrder = new UseOrder();
  private readonly oldestState = new OldestKey(this.states);
  private readonly oldestBlock = new OldestKey(this.blocks);
  private writesSinceSweep = 0;
  private liveAfterSweep = 0;

  constructor(public maxKeys = DEFAULT_MEMORY_MAX_KEYS) {}

  get size(): number {
    return this.states.size + this.blocks.size;
  }

  get(key: string, now: number): unknown {
    const map = isBlockKey(key) ? this.blocks : this.states;
    const entry = map.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      map.delete(key);
      return undefined;
    }
    // Most recently used last: Map keeps insertion order, so the first key is the LRU victim.
    if (map === this.states) this.stateOrder.used(map, key, entry);
    return entry.value;
  }

  set(key: string, value: unknown, ttlMs: number, now: number): void {
    const map = isBlockKey(key) ? this.blocks : this.states;
    (map === this.states ? this.stateOrder : this.blockOrder).set(map, key, { value, expiresAt: now + ttlMs, placed: 0 });
    if (map.size > this.maxKeys) map.delete((map === this.states ? this.oldestState : this.oldestBlock).take()!);
    // Sweep after as many writes as there were live entries at the last sweep (not the current size,
    // which counts the expired ones too and would keep moving the threshold out of reach).
    if (++this.writesSinceSweep >= Math.max(1024, this.liveAfterSweep)) this.sweep(now);
  }

  /** A check's save of a state key: as set(), but its expiry never moves earlier (FrameStorage.save). */
  save(key: string, value: unknown, ttlMs: number, now: number): void {
    const expiresAt = this.states.get(key)?.expiresAt ?? now;
    this.set(key, value, Math.max(ttlMs, expiresAt - now), now);
  }

  /** Drops every expired entry; runs after as many writes as there are entries, so O(1) amortised. */
  sweep(now: number): void {
    this.writesSinceSweep = 0;
    for (const map of [this.states, this.blocks]) {
      for (const [key, entry] of map) if (entry.expiresAt <= now) map.delete(key);
    }
    this.liveAfterSweep = this.size;
  }

  run(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Reply {
    return runFrame(program.algorithm.twin, program.params, this, keys, argv, ctx.now, {
      receipts: program.refundable ? program.algorithm.undo.twin : undefined,
      lockout: program.lockout,
    });
  }

  settle(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): void {
    runSettle(program.algorithm, this, keys, argv, ctx.now);
  }

  refund(algorithm: Algorithm, keys: string[], receipts: string[], cost: number | string, ctx: RunContext): void {
    keys.forEach((key, i) => {
      const stored = this.get(key, ctx.now);
      if (stored !== undefined) giveBackTwin(algorithm, stored, receipts[i]!, cost);
    });
  }

  block(key: string, index: string, durationMs: number, reason: string, nowArg: string, pad: number, now: number): void {
    const at = nowArg === '' ? now : Number(nowArg);
    this.set(key, `${at + durationMs}|${reason}`, durationMs + pad, at);
    indexTwin(this, index, key, at + durationMs, at, pad);
  }

  unblock(key: string, index: string, others: string[], nowArg: string, pad: number, now: number): void {
    const at = nowArg === '' ? now : Number(nowArg);
    this.delete([key, ...others]);
    indexTwin(this, index, key, undefined, at, pad);
  }

  /** Nothing to keep whole: a check here is answered at once, never batched. */
  keepWhole(): void {}

  /** Forgets every key (resetPrefix, between tests). */
  clear(): void {
    this.states.clear();
    this.blocks.clear();
  }

  delete(keys: string[]): void {
    for (const key of keys) (isBlockKey(key) ? this.blocks : this.states).delete(key);
  }
}

const sharedStores = shared('memoryStores', () => new Map<string, MemoryStore>());
/**
 * Limiters without Redis share one store per prefix, so a block applies to all of them, as in Redis. Its
 * bound is the largest `memory.maxKeys` asked for under this prefix (a store only ever grows its bound).
 */
export function sharedMemoryStore(prefix: string, maxKeys: number): MemoryStore {
  let store = sharedStores.get(prefix);
  if (store === undefined) {
    store = new MemoryStore(maxKeys);
    sharedStores.set(prefix, store);
  } else store.maxKeys = Math.max(store.maxKeys, maxKeys);
  return store;
}

const privateStores = byPrefix<MemoryStore>('memoryStores');

/**
 * A memory store of one limiter's own (a limiter on a test clock, a `failure: 'local'` fallback): not
 * shared, but found by its prefix when a test resets it.
 */
export function privateMemoryStore(prefix: string, maxKeys: number): MemoryStore {
  return privateStores.add(prefix, new MemoryStore(maxKeys));
}

/** Empties every memory store of a prefix in this process, shared or private (resetPrefix). */
export function clearMemoryStores(prefix: string): void {
  sharedStores.get(prefix)?.clear();
  privateStores.clear(prefix);
}
