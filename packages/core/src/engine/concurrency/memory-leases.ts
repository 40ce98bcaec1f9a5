import { shared } from '../../kernel/state';
import { byPrefix } from '../../kernel/by-prefix';
import { OldestKey, RoundRobin, UseOrder, type Placed } from '../../kernel/insertion-order';
import { acquireTwin, releaseTwin, type LeaseSets } from '../../scripts/lease-script';
import { DEFAULT_MEMORY_MAX_KEYS } from '../../stores/memory';

/** An identifier's leases (lease id to expiry) and the latest expiry among them. */
interface LeaseSet extends Placed {
  leases: Map<string, number>;
  latest: number;
}

/**
 * The leases of the memory store and of `failure: 'local'`: the scripts' JavaScript twin over a Map.
 *
 * Bounded (docs/security.md, "Unbounded memory"): a set never holds more than `max` live leases (the twin
 * denies past it, and prunes expired ones first), and at most `maxKeys` identifiers have a set: past that
 * the least recently used set is forgotten, which can only under-limit that identifier. A set whose last
 * lease is released, or whose leases all expired unreleased (a request that never ended), counts for
 * nothing and keeps its entry for the identifier's next lease: deleting a busy identifier's entry at every
 * release and setting it again at its next lease would make each lease walk the entry's past copies in its
 * hash chain (kernel/counts.ts says why). The cleanup each write makes of one other set, round and round,
 * drops such sets.
 */
export class MemoryLeases implements LeaseSets {
  private readonly sets = new Map<string, LeaseSet>();
  /** Least recently used first, for the bound. */
  private readonly order = new UseOrder();
  private readonly oldest = new OldestKey(this.sets);
  private readonly sweep = new RoundRobin(this.sets);

  constructor(public maxKeys = DEFAULT_MEMORY_MAX_KEYS) {}

  /** Forgets every lease (resetPrefix, between tests). */
  clear(): void {
    this.sets.clear();
  }

  /** Identifiers with a set (for tests). */
  get size(): number {
    return this.sets.size;
  }

  read(key: string, now: number): Map<string, number> | undefined {
    const entry = this.sets.get(key);
    if (entry === undefined || entry.latest <= now) return undefined;
    this.order.used(this.sets, key, entry);
    return entry.leases;
  }

  write(key: string, leases: Map<string, number>, now: number): void {
    let latest = 0;
    for (const expiry of leases.values()) latest = Math.max(latest, expiry);
    this.order.set(this.sets, key, { leases, latest, placed: 0 });
    if (this.sets.size > this.maxKeys) this.sets.delete(this.oldest.take()!);
    // One other set goes once it counts for nothing and has not been used lately: a busy identifier's set,
    // emptied at each release, is met at the end again and again, and must not be deleted every time.
    const other = this.sweep.next((k) => k === key);
    const entry = other === undefined ? undefined : this.sets.get(other)!;
    if (entry !== undefined && entry.latest <= now && !this.order.recent(entry, this.sets.size)) this.sets.delete(other!);
  }

  remove(key: string): void {
    const entry = this.sets.get(key);
    if (entry !== undefined) entry.latest = 0;
  }

  acquire(keys: readonly string[], id: string, max: number, leaseMs: number, now: number): number[] {
    return acquireTwin(this, keys, id, max, leaseMs, now);
  }

  release(keys: readonly string[], id: string, now: number): number {
    return releaseTwin(this, keys, id, now);
  }
}

const sharedLeases = shared('memoryLeases', () => new Map<string, MemoryLeases>());

/**
 * Concurrency limiters without Redis share one set of leases per prefix, as they would share keys in one
 * Redis; its bound is the largest `memory.maxKeys` asked for under the prefix.
 */
export function sharedMemoryLeases(prefix: string, maxKeys: number): MemoryLeases {
  let leases = sharedLeases.get(prefix);
  if (leases === undefined) {
    leases = new MemoryLeases(maxKeys);
    sharedLeases.set(prefix, leases);
  } else leases.maxKeys = Math.max(leases.maxKeys, maxKeys);
  return leases;
}

const privateLeases = byPrefix<MemoryLeases>('memoryLeases');

/** Leases of one concurrency limiter's own (a test clock, a `failure: 'local'` fallback), found by prefix on a reset. */
export function privateMemoryLeases(prefix: string, maxKeys: number): MemoryLeases {
  return privateLeases.add(prefix, new MemoryLeases(maxKeys));
}

/** Releases every in-memory lease of a prefix in this process, shared or private (resetPrefix). */
export function clearMemoryLeases(prefix: string): void {
  sharedLeases.get(prefix)?.clear();
  privateLeases.clear(prefix);
}
