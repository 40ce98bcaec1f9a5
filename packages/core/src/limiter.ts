import { ConfigError, StoreError, describeValue } from './errors';
import { decodeReply, type Decision } from './decision';
import { encodeIdentifier, keyScheme, type KeyScheme } from './keys';
import { resolveOptions, type LimiterOptions, type ResolvedOptions, type LimiterEvent } from './options';
import { parseDuration, type Rule } from './rules';
import type { Reply } from './algorithms/frame';
import { MemoryStore, sharedMemoryStore } from './stores/memory';
import { RedisStore } from './stores/redis';
import { createProgram, type Program } from './algorithms/compile';
import { ClusterStore } from './stores/cluster';
import type { Store } from './stores/types';
import { register, unregister } from './registry';
import { acquire, type AcquireOptions, type WaitQueues } from './acquire';
import { BlockCache, evictEverywhere } from './block-cache';
import { CallPlanner, type Prepared } from './call-plan';
import { toStoreError, withDeadline } from './deadline';

export interface CheckOptions {
  /** Units this call consumes (a non-negative integer; default 1). Cost 0 consumes nothing. */
  cost?: number;
}

export interface BlockOptions {
  /** Required and finite: ms or a duration string. */
  duration: number | string;
  reason?: string;
}

export interface Limiter {
  readonly name: string;
  readonly prefix: string;
  readonly algorithm: string;
  readonly rules: readonly Rule[];
  readonly failure: ResolvedOptions['failure'];
  readonly mode: ResolvedOptions['mode'];
  /** Checks every rule for every identifier in one store call; consumes only if all admit the cost. */
  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision>;
  /** The same decision as check(), consuming nothing. */
  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision>;
  /** Forgets this limiter's counts for these identifiers (manual blocks stay: see unblock). */
  reset(identifiers: string | readonly string[]): Promise<void>;
  /** Denies every check of this identifier, in every limiter with this prefix, for `duration`. */
  block(identifier: string, options: BlockOptions): Promise<void>;
  unblock(identifier: string): Promise<void>;
  /** Waits (sleeping, first come first served) until a check passes; gives up after maxWaitMs or on abort. */
  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision>;
  close(): Promise<void>;
}

/**
 * Internal (not exported from the package): `limiter[checkNow](identifiers, cost)` is check() that answers
 * a client the block cache already denies synchronously (the Decision itself: no promise, no store call),
 * else a promise of the decision. Invalid identifiers or cost throw the ArgumentError check() rejects with.
 */
export const checkNow: unique symbol = Symbol('floodgate.checkNow');

export function createLimiter(options: LimiterOptions): Limiter {
  return new FloodgateLimiter(resolveOptions(options));
}

export class FloodgateLimiter implements Limiter {
  readonly name: string;
  readonly prefix: string;
  readonly algorithm: string;
  readonly rules: readonly Rule[];
  readonly failure: ResolvedOptions['failure'];
  readonly mode: ResolvedOptions['mode'];
  private readonly opts: ResolvedOptions;
  private readonly store: Store;
  private readonly redis: RedisStore | undefined;
  private localStore: MemoryStore | undefined;
  /** Denials remembered in-process (Redis only; never in shadow mode or with penalty: both must reach Redis). */
  private readonly cache: BlockCache | undefined;
  private readonly keys: KeyScheme;
  private readonly planner: CallPlanner;
  /** The algorithm and its scripts for these rules. */
  private readonly program: Program;
  private readonly queues: WaitQueues = new Map();
  private failing = false;
  private closed = false;

  constructor(opts: ResolvedOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.prefix = opts.prefix;
    this.algorithm = opts.algorithm.name;
    this.rules = opts.rules;
    this.failure = opts.failure;
    this.mode = opts.mode;
    register(opts);
    this.redis = opts.redis ? new (opts.redis.isCluster ? ClusterStore : RedisStore)(opts.redis) : undefined;
    this.store = this.redis ?? (opts.clock ? new MemoryStore() : sharedMemoryStore(opts.prefix));
    const clock = opts.clock;
    const bypass = opts.mode === 'shadow' || opts.penalty || opts.blockCacheMax === 0;
    this.cache = this.redis && !bypass ? new BlockCache(opts.prefix, opts.name, opts.blockCacheMax, clock ?? (() => performance.now())) : undefined;
    this.keys = keyScheme(opts.prefix, opts.name, opts.algorithm.tag, opts.colocate);
    this.planner = new CallPlanner(opts, this.keys);
    this.program = createProgram(opts.algorithm, opts.rules);
  }

  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return settle(() => this.start('c', identifiers, options?.cost));
  }

  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return settle(() => this.start('p', identifiers, options?.cost));
  }

  [checkNow](identifiers: string | readonly string[], cost: number | undefined): Decision | Promise<Decision> {
    return this.start('c', identifiers, cost);
  }

  async reset(identifiers: string | readonly string[]): Promise<void> {
    const ids = this.planner.identifiers(identifiers);
    const keys = ids.map((id) => this.keys.state(encodeIdentifier(id)));
    evictEverywhere(this.prefix, this.name, ids);
    await this.admin(() => this.store.delete(keys));
  }

  async block(identifier: string, options: BlockOptions): Promise<void> {
    const [id] = this.planner.identifiers(identifier);
    if (typeof options !== 'object' || options === null) {
      throw new ConfigError('duration', 'is required: block(identifier, { duration: \'10m\', reason })');
    }
    const durationMs = parseDuration(options.duration, 'duration');
    const reason = options.reason ?? '';
    if (typeof reason !== 'string' || reason.length > 256) {
      throw new ConfigError('reason', `must be a string of at most 256 characters; got ${describeValue(reason)}`);
    }
    const key = this.keys.block(encodeIdentifier(id!));
    await this.admin(() => this.store.block(key, durationMs, reason, this.planner.nowArg(), this.planner.pad, this.now()));
  }

  async unblock(identifier: string): Promise<void> {
    const [id] = this.planner.identifiers(identifier);
    evictEverywhere(this.prefix, undefined, [id!]);
    await this.admin(() => this.store.delete([this.keys.block(encodeIdentifier(id!))]));
  }

  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision> {
    return acquire(this, this.queues, identifiers, options);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cache?.dispose();
    unregister(this.opts);
  }

  private now(): number {
    return this.opts.clock ? this.opts.clock() : Date.now();
  }

  private async admin(op: () => Promise<void> | void): Promise<void> {
    try {
      if (this.redis) {
        const usable = this.redis.usable();
        if (usable !== true) await usable;
      }
      await op();
    } catch (err) {
      throw err instanceof StoreError ? err : new StoreError('reply', 'Redis rejected the command', err);
    }
  }

  /** Validates, then answers from the block cache (synchronously) or asks the store. */
  private start(op: 'c' | 'p', input: string | readonly string[], costInput: unknown): Decision | Promise<Decision> {
    const ids = this.planner.identifiers(input);
    const cost = this.planner.cost(costInput);
    // The cache first: a client answered from it costs no key encoding, no script arguments and no promise.
    const cached = this.cache?.lookup(ids, cost);
    if (cached) return cached;
    return this.evaluate(op, ids, cost);
  }

  private async evaluate(op: 'c' | 'p', ids: string[], cost: number): Promise<Decision> {
    const call = this.planner.prepare(op, ids, cost);
    let decision: Decision;
    if (this.redis) {
      try {
        const reply = await this.runRedis(this.redis, call);
        decision = decodeReply(reply, call.ids, call.ruleLists, this.rules, call.cost, 'redis');
        this.cache?.remember(decision, call.cost);
        this.failing = false;
      } catch (err) {
        decision = this.fallback(call, toStoreError(err));
      }
    } else {
      decision = this.runMemory(this.store as MemoryStore, call, 'memory');
    }
    return this.opts.mode === 'shadow' ? this.shadow(decision) : decision;
  }

  private async runRedis(store: RedisStore, call: Prepared): Promise<Reply> {
    const usable = store.usable();
    if (usable !== true) await usable;
    return store.breaker.call(() => withDeadline(store.run(this.program, call.keys, call.argv), this.opts.timeoutMs));
  }

  private runMemory(store: MemoryStore, call: Prepared, source: 'memory' | 'fallback'): Decision {
    const reply = store.run(this.program, call.keys, call.argv, this.now());
    return decodeReply(reply, call.ids, call.ruleLists, this.rules, call.cost, source);
  }

  private fallback(call: Prepared, error: StoreError): Decision {
    this.emit({ type: 'store-error', limiter: this.name, error, policy: this.failure });
    if (!this.failing) {
      this.failing = true;
      this.opts.logger.warn(`floodgate: limiter '${this.name}' cannot reach its store (${error.message}); failure policy '${this.failure}' applies`);
    }
    if (this.failure === 'local') {
      this.localStore ??= new MemoryStore();
      return { ...this.runMemory(this.localStore, call, 'fallback'), error };
    }
    const allowed = this.failure === 'open';
    const decision: Decision = {
      allowed, source: 'fallback', limit: Infinity, windowMs: 0, remaining: Infinity, resetMs: 0,
      retryAfterMs: allowed ? 0 : Math.min(1000, this.opts.timeoutMs * 4), cost: call.cost, states: [], error,
    };
    if (!allowed) decision.reason = 'store-unavailable';
    return decision;
  }

  private shadow(decision: Decision): Decision {
    if (decision.allowed) return decision;
    if (decision.reason !== 'store-unavailable') this.emit({ type: 'shadow-deny', limiter: this.name, decision });
    return { ...decision, allowed: true, reason: undefined, retryAfterMs: 0, shadowDenied: true };
  }

  private emit(event: LimiterEvent): void {
    if (!this.opts.onEvent) return;
    try {
      this.opts.onEvent(event);
    } catch (err) {
      this.opts.logger.warn(`floodgate: onEvent threw: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/** The promise API over start(): a synchronous answer resolved, a synchronous throw rejected. */
function settle(start: () => Decision | Promise<Decision>): Promise<Decision> {
  try {
    const decision = start();
    return decision instanceof Promise ? decision : Promise.resolve(decision);
  } catch (err) {
    return Promise.reject(err);
  }
}
