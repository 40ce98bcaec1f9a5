import { randomBytes } from 'node:crypto';
import { StoreError } from '../../kernel/errors';
import { Counts } from '../../kernel/counts';
import { storeFailureWarning, toStoreError } from '../../stores/deadline';
import { Events } from '../events';
import { encodeIdentifier, keyScheme, type KeyScheme } from '../../scripts/keys';
import type { ResolvedOptions } from '../options';
import { CallPlanner } from '../call-plan';
import { RedisStore } from '../../stores/redis';
import { adapterOf } from '../../stores/clients';
import { keySlot } from '../../stores/cluster';
import { ACQUIRE_LUA, RELEASE_LUA, decodeAcquire, type AcquireReply } from '../../scripts/lease-script';
import { privateMemoryLeases, sharedMemoryLeases, type MemoryLeases } from './memory-leases';
import { resolveConcurrencyOptions, type ConcurrencyLimiterOptions, type ResolvedConcurrencyOptions } from './options';
import type { FailurePolicy } from '../../config/failure-policy';

/** redis / memory: the store decided; fallback: the failure policy; local: this process, without asking the store. */
export type LeaseSource = 'redis' | 'memory' | 'fallback' | 'local';
/**
 * concurrency: an identifier had `max` requests in flight; store-unavailable: `failure: 'closed'` (or
 * overload); unidentified: the HTTP layer could not tell who the client is, and `unidentified: 'deny'`.
 */
export type LeaseDenyReason = 'concurrency' | 'store-unavailable' | 'unidentified';

export interface Lease {
  readonly granted: boolean;
  readonly source: LeaseSource;
  readonly reason?: LeaseDenyReason;
  /** The identifier that had no room, when the store said so. */
  readonly identifier?: string;
  readonly max: number;
  /** Requests in flight for the fullest identifier: after the grant (this one included), or at the denial. 0 when unknown. */
  readonly inFlight: number;
  /** 0 when granted; else a hint of when to retry, at most 1 s (a slot frees whenever a request ends). */
  readonly retryAfterMs: number;
  /** Why the store could not decide, when source is 'fallback' (or 'local' after a store failure). */
  readonly error?: StoreError;
  /**
   * Frees the slot. Resolves true the first time, when the lease still held it; false when it held none
   * (denied, granted by `failure: 'open'`, expired) or was released before. Never rejects: a release that
   * cannot reach Redis is logged, and the lease expires after `leaseMs`.
   */
  release(): Promise<boolean>;
}

export interface ConcurrencyLimiter {
  readonly name: string;
  readonly prefix: string;
  readonly max: number;
  readonly leaseMs: number;
  readonly failure: FailurePolicy;
  /**
   * Takes one slot of every identifier, all or nothing, in one round trip (one per hash slot on a
   * Cluster). Resolves with a granted or denied lease; rejects only on bad identifiers (ArgumentError).
   */
  lease(identifiers: string | readonly string[]): Promise<Lease>;
  close(): Promise<void>;
}

export function createConcurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  return new Leases(resolveConcurrencyOptions(options));
}

/** Lease ids: random per process (96 bits) and a counter, so ids of two processes never meet in a set. */
const PROCESS_TAG = randomBytes(12).toString('base64url');
let counter = 0;
function nextLeaseId(): string {
  return `${PROCESS_TAG}.${(++counter).toString(36)}`;
}

/** The keys of one script call: all of a lease's keys, or on a Cluster those of one hash slot. */
type Group = string[];

const NOT_HELD = (): Promise<boolean> => Promise.resolve(false);

class Leases implements ConcurrencyLimiter {
  readonly name: string;
  readonly prefix: string;
  readonly max: number;
  readonly leaseMs: number;
  readonly failure: FailurePolicy;
  private readonly opts: ResolvedOptions;
  /** `onEvent`, as a rate limiter's: guarded, and without identifiers (a concurrency limiter has no `events` option). */
  private readonly events: Events;
  private readonly store: RedisStore | undefined;
  private readonly memory: MemoryLeases | undefined;
  /** The `failure: 'local'` twin, made on first use. */
  private local: MemoryLeases | undefined;
  private readonly keys: KeyScheme;
  private readonly planner: CallPlanner;
  /**
   * This process's leases per identifier, held or being acquired (Redis only). When this process alone
   * has `max` of an identifier's leases, Redis can only deny, so the lease is denied here without a
   * script: a client's own flood of requests to one process costs at most `max` scripts at a time, and
   * `failure: 'open'` grants at most `max` per identifier per process during an outage (docs/concurrency.md).
   */
  private readonly tally: Tally | undefined;
  private readonly bySlot: boolean;
  private failing = false;
  private unsupportedWarned = false;
  private releaseFailing = false;

  constructor(resolved: ResolvedConcurrencyOptions) {
    const opts = resolved.common;
    this.opts = opts;
    this.events = new Events(opts.name, opts.onEvent, opts.eventIdentifiers, opts.logger);
    this.name = opts.name;
    this.prefix = opts.prefix;
    this.max = resolved.max;
    this.leaseMs = resolved.leaseMs;
    this.failure = opts.failure;
    this.store = opts.redis ? new RedisStore(opts.redis, opts.logger) : undefined;
    this.memory = opts.redis
      ? undefined
      : opts.clock
        ? privateMemoryLeases(opts.prefix, opts.memoryMaxKeys)
        : sharedMemoryLeases(opts.prefix, opts.memoryMaxKeys);
    this.keys = keyScheme(opts.prefix, opts.name, 'cc1', opts.colocate);
    this.planner = new CallPlanner(opts, this.keys);
    this.tally = this.store ? new Tally() : undefined;
    this.bySlot = opts.redis !== undefined && adapterOf(opts.redis).isCluster;
  }

  async lease(input: string | readonly string[]): Promise<Lease> {
    const ids = this.planner.identifiers(input);
    const keys = ids.map((id) => this.keys.state(encodeIdentifier(id)));
    if (this.memory !== undefined) return this.twin(this.memory, ids, keys, 'memory');
    const full = this.tally!.full(ids, this.max);
    if (full !== undefined) return this.denied('local', 'concurrency', full, this.max, 1000);
    this.tally!.add(ids);
    return this.acquire(ids, keys, this.opts.timeoutMs);
  }

  async close(): Promise<void> {
    // Nothing process-wide to free: leases still held are released by their owners or expire.
  }

  /** One acquire script per group, in parallel; all granted, or whatever was taken is given back. */
  private async acquire(ids: string[], keys: string[], budgetMs: number): Promise<Lease> {
    const id = nextLeaseId();
    const groups = this.groups(keys);
    const argv = [id, this.max, this.leaseMs, this.planner.nowArg(), this.planner.pad];
    const settled = await Promise.allSettled(groups.map((g) => this.store!.script('lease', ACQUIRE_LUA, g, argv, budgetMs)));
    const replies = settled.map((s) => (s.status === 'fulfilled' ? decodeAcquire(s.value) : undefined));
    if (replies.every((r) => r?.granted)) {
      this.failing = false;
      const inFlight = Math.max(...replies.flatMap((r) => r!.counts));
      return this.granted('redis', ids, inFlight, () => this.releaseRemote(groups, id));
    }
    // Not granted as a whole: give back every group that granted, or that may yet (a call that timed out
    // can still run; ZREM of its own lease id after it, on the same connection, undoes it).
    const taken = groups.filter((_, i) => replies[i]?.granted !== false);
    for (const g of taken)
      this.store!.script('release', RELEASE_LUA, g, [id, this.planner.nowArg()], this.opts.timeoutMs).catch(() => undefined);
    const at = replies.findIndex((r) => r?.granted === false);
    if (at !== -1) {
      this.failing = false;
      this.tally!.remove(ids);
      return this.full(replies[at]!, groups[at]!, keys, ids);
    }
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')!;
    return this.fallback(ids, keys, toStoreError(failure.reason));
  }

  /** A denial by the store: the first identifier (of the first full group) with no room. */
  private full(reply: AcquireReply, group: Group, keys: string[], ids: string[]): Lease {
    const identifier = ids[keys.indexOf(group[reply.full]!)];
    return this.denied('redis', 'concurrency', identifier, reply.counts[reply.full]!, Math.min(1000, reply.freesInMs));
  }

  private groups(keys: string[]): Group[] {
    if (!this.bySlot) return [keys];
    const bySlot = new Map<number, Group>();
    for (const key of keys) {
      const slot = keySlot(key);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [key]);
      else group.push(key);
    }
    return [...bySlot.values()];
  }

  private releaseRemote(groups: Group[], id: string): Promise<boolean> {
    const argv = [id, this.planner.nowArg()];
    return Promise.all(groups.map((g) => this.store!.script('release', RELEASE_LUA, g, argv, this.opts.timeoutMs))).then(
      (held) => {
        this.releaseFailing = false;
        return held.some((h) => Number(h) === 1);
      },
      (err: unknown) => {
        const error = toStoreError(err);
        this.events.storeError(error, this.failure);
        if (!this.releaseFailing) {
          this.releaseFailing = true;
          this.opts.logger.warn(
            `floodgate: concurrency limiter '${this.name}' could not release a lease (${error.message}); its slot frees when the lease expires (leaseMs ${this.leaseMs})`,
          );
        }
        return false;
      },
    );
  }

  private now(): number {
    return this.opts.clock ? this.opts.clock() : Date.now();
  }

  /** A lease decided by the JavaScript twin: the memory store, or `failure: 'local'`. */
  private twin(leases: MemoryLeases, ids: string[], keys: string[], source: LeaseSource, error?: StoreError): Lease {
    const id = nextLeaseId();
    const reply = decodeAcquire(leases.acquire(keys, id, this.max, this.leaseMs, this.now()));
    if (!reply.granted) {
      this.tally?.remove(ids);
      return { ...this.full(reply, keys, keys, ids), source, error };
    }
    const lease = this.granted(source, ids, Math.max(...reply.counts), () => Promise.resolve(leases.release(keys, id, this.now()) === 1));
    return error === undefined ? lease : Object.assign(lease, { error });
  }

  /**
   * A granted lease. Its place among this process's leases (Redis only) is held until release() or until
   * `leaseMs`, when Redis has freed the slot too: a lease nobody releases never blocks the identifier here.
   */
  private granted(source: LeaseSource, ids: string[], inFlight: number, free: () => Promise<boolean>): Lease {
    let released = false;
    let counted = this.tally !== undefined;
    const uncount = (): void => {
      if (!counted) return;
      counted = false;
      clearTimeout(timer);
      this.tally!.remove(ids);
    };
    const timer = counted ? setTimeout(uncount, this.leaseMs).unref() : undefined;
    return {
      granted: true,
      source,
      max: this.max,
      inFlight,
      retryAfterMs: 0,
      release: () => {
        if (released) return Promise.resolve(false);
        released = true;
        uncount();
        return free();
      },
    };
  }

  private denied(
    source: LeaseSource,
    reason: LeaseDenyReason,
    identifier: string | undefined,
    inFlight: number,
    retryAfterMs: number,
  ): Lease {
    return { granted: false, source, reason, identifier, max: this.max, inFlight, retryAfterMs, release: NOT_HELD };
  }

  /** The store could not decide: the failure policy, once the event and (once while failing) a warning are out. */
  private fallback(ids: string[], keys: string[], error: StoreError): Lease {
    this.events.storeError(error, this.failure);
    if (!this.failing || (error.kind === 'unsupported' && !this.unsupportedWarned)) {
      this.failing = true;
      if (error.kind === 'unsupported') this.unsupportedWarned = true;
      this.opts.logger.warn(storeFailureWarning(`concurrency limiter '${this.name}'`, error, this.failure));
    }
    // Overload (Redis answering, this process's own backlog out of time) is not an outage: never granted by 'open'.
    const policy = error.kind === 'overload' && this.failure === 'open' ? 'closed' : this.failure;
    if (policy === 'local') {
      this.local ??= privateMemoryLeases(this.opts.prefix, this.opts.memoryMaxKeys);
      return this.twin(this.local, ids, keys, 'fallback', error);
    }
    if (policy === 'open') return Object.assign(this.granted('fallback', ids, 0, NOT_HELD), { error });
    this.tally!.remove(ids);
    return { ...this.denied('fallback', 'store-unavailable', undefined, 0, Math.min(1000, this.opts.timeoutMs * 4)), error };
  }
}

/** Leases of this process per identifier (held, or being acquired); an identifier with none has no entry. */
class Tally {
  /** Leases per identifier (a busy one's entry is kept at 0 between its leases: kernel/counts.ts). */
  private readonly counts = new Counts();

  /** The first identifier with `max` or more, if any. */
  full(ids: readonly string[], max: number): string | undefined {
    return ids.find((id) => this.counts.get(id) >= max);
  }

  add(ids: readonly string[]): void {
    for (const id of ids) this.counts.add(id, 1);
  }

  remove(ids: readonly string[]): void {
    for (const id of ids) this.counts.take(id, 1);
  }
}
