import type { Program } from '../algorithms/compile';
import { runFrame, type FrameStorage, type Reply } from '../algorithms/frame';
import type { Store } from './types';

interface Entry {
  value: unknown;
  expiresAt: number;
}

/**
 * The in-memory store: the algorithms' JavaScript twins over a Map with per-key expiry. Time is the
 * caller's (`now`), so an injected clock drives expiry too. Memory stays bounded by the live keys:
 * expired entries are dropped when read and by a sweep whose cost is amortised over writes, so
 * the map holds at most about twice the live keys (plus 1,024).
 */
export class MemoryStore implements Store, FrameStorage {
  readonly source = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  private writesSinceSweep = 0;
  private liveAfterSweep = 0;

  get size(): number {
    return this.entries.size;
  }

  get(key: string, now: number): unknown {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: unknown, ttlMs: number, now: number): void {
    this.entries.set(key, { value, expiresAt: now + ttlMs });
    // Sweep after as many writes as there were live entries at the last sweep (not the current size,
    // which counts the expired ones too and would keep moving the threshold out of reach).
    if (++this.writesSinceSweep >= Math.max(1024, this.liveAfterSweep)) this.sweep(now);
  }

  /** Drops every expired entry; runs after as many writes as there are entries, so O(1) amortised. */
  sweep(now: number): void {
    this.writesSinceSweep = 0;
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
    this.liveAfterSweep = this.entries.size;
  }

  run(program: Program, keys: string[], argv: (string | number)[], now: number): Reply {
    return runFrame(program.algorithm.twin, this, keys, argv, now);
  }

  block(key: string, durationMs: number, reason: string, nowArg: string, pad: number, now: number): void {
    const at = nowArg === '' ? now : Number(nowArg);
    this.set(key, `${at + durationMs}|${reason}`, durationMs + pad, at);
  }

  delete(keys: string[]): void {
    for (const key of keys) this.entries.delete(key);
  }
}

const sharedStores = new Map<string, MemoryStore>();
/** Limiters without Redis share one store per prefix, so a block applies to all of them, as in Redis. */
export function sharedMemoryStore(prefix: string): MemoryStore {
  let store = sharedStores.get(prefix);
  if (store === undefined) {
    store = new MemoryStore();
    sharedStores.set(prefix, store);
  }
  return store;
}
