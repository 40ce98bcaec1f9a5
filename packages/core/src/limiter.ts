import { ArgumentError, ConfigError, StoreError, describeValue } from './errors';
import { decodeReply, type Decision } from './decision';
import { encodeIdentifier, identifierKind, keyScheme, type KeyScheme } from './keys';
import { resolveOptions, type LimiterOptions, type ResolvedOptions, type LimiterEvent } from './options';
import { parseDuration, type Rule } from './rules';
import type { Reply } from './algorithms/frame';
import { MemoryStore } from './stores/memory';
import { RedisStore } from './stores/redis';
import { ClusterStore } from './stores/cluster';
import type { Store } from './stores/types';
import { register, unregister } from './registry';
import { acquire, type AcquireOptions, type WaitQueues } from './acquire';
import { BlockCache, evictEverywhere } from './block-cache';

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

/** Test-mode TTL padding: the caller's clock may run ahead of the real time Redis expires keys in. */
const CLOCK_PAD_MS = 600_000;
const MAX_IDENTIFIERS = 64;
const MAX_COST = 1_000_000_000;

interface Prepared {
  ids: string[];
  keys: string[];
  argv: (string | number)[];
  ruleLists: number[][];
  cost: number;
}

interface KindPlan {
  mask: string;
  rules: number[];
}

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
  private readonly ruleArgs: (string | number)[];
  private readonly plans = new Map<string, KindPlan>();
  private readonly queues: WaitQueues = new Map();
  private readonly nowArg: () => string;
  private readonly pad: number;
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
    this.nowArg = clock ? () => String(clock()) : () => '';
    this.pad = clock ? CLOCK_PAD_MS : 0;
    const bypass = opts.mode === 'shadow' || opts.penalty || opts.blockCacheMax === 0;
    this.cache = this.redis && !bypass ? new BlockCache(opts.prefix, opts.name, opts.blockCacheMax, clock ?? (() => performance.now())) : undefined;
    this.keys = keyScheme(opts.prefix, opts.name, opts.algorithm.tag, opts.colocate);
    this.ruleArgs = [opts.rules.length];
    for (const r of opts.rules) this.ruleArgs.push(r.windowMs, r.limit, opts.algorithm.param(r));
  }

  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return this.evaluate('c', identifiers, options);
  }

  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return this.evaluate('p', identifiers, options);
  }

  async reset(identifiers: string | readonly string[]): Promise<void> {
    const ids = this.identifiers(identifiers);
    const keys = ids.map((id) => this.keys.state(encodeIdentifier(id)));
    evictEverywhere(this.prefix, this.name, ids);
    await this.admin(() => this.store.delete(keys));
  }

  async block(identifier: string, options: BlockOptions): Promise<void> {
    const [id] = this.identifiers(identifier);
    if (typeof options !== 'object' || options === null) {
      throw new ConfigError('duration', 'is required: block(identifier, { duration: \'10m\', reason })');
    }
    const durationMs = parseDuration(options.duration, 'duration');
    const reason = options.reason ?? '';
    if (typeof reason !== 'string' || reason.length > 256) {
      throw new ConfigError('reason', `must be a string of at most 256 characters; got ${describeValue(reason)}`);
    }
    const key = this.keys.block(encodeIdentifier(id!));
    await this.admin(() => this.store.block(key, durationMs, reason, this.nowArg(), this.pad, this.now()));
  }

  async unblock(identifier: string): Promise<void> {
    const [id] = this.identifiers(identifier);
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

  private identifiers(input: string | readonly string[]): string[] {
    const list = typeof input === 'string' ? [input] : input;
    if (!Array.isArray(list) || list.length === 0) {
      throw new ArgumentError(`identifiers must be a non-empty string or array of strings; got ${describeValue(input)}`);
    }
    const ids = list.length === 1 ? [list[0]] : [...new Set(list)];
    if (ids.length > MAX_IDENTIFIERS) throw new ArgumentError(`at most ${MAX_IDENTIFIERS} identifiers per call; got ${ids.length}`);
    for (const id of ids) {
      if (typeof id !== 'string' || id.length === 0) {
        throw new ArgumentError(`every identifier must be a non-empty string; got ${describeValue(id)}`);
      }
    }
    return ids as string[];
  }

  private plan(id: string): KindPlan {
    const kind = identifierKind(id);
    let plan = this.plans.get(kind);
    if (plan === undefined) {
      const rules: number[] = [];
      let mask = '';
      this.rules.forEach((rule, j) => {
        const applies = rule.for === undefined || rule.for === kind;
        mask += applies ? '1' : '0';
        if (applies) rules.push(j);
      });
      plan = { mask, rules };
      // Kinds come from callers; cap the cache so hostile identifiers cannot grow it without bound.
      if (this.plans.size < 1024) this.plans.set(kind, plan);
    }
    return plan;
  }

  private prepare(op: 'c' | 'p', input: string | readonly string[], options?: CheckOptions): Prepared {
    const ids = this.identifiers(input);
    const cost = options?.cost ?? 1;
    if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0 || cost > MAX_COST) {
      throw new ArgumentError(`cost must be a non-negative integer; got ${describeValue(cost)}`);
    }
    const keys: string[] = [];
    const masks: string[] = [];
    const ruleLists: number[][] = [];
    for (const id of ids) {
      const enc = encodeIdentifier(id);
      keys.push(this.keys.state(enc), this.keys.block(enc));
      const plan = this.plan(id);
      masks.push(plan.mask);
      ruleLists.push(plan.rules);
    }
    const penalty = this.opts.penalty && this.opts.mode === 'enforce' ? '1' : '0';
    const argv = [op, cost, penalty, this.nowArg(), this.pad, ...this.ruleArgs, ...masks];
    return { ids, keys, argv, ruleLists, cost };
  }

  private async evaluate(op: 'c' | 'p', input: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    const call = this.prepare(op, input, options);
    let decision: Decision;
    const cached = this.cache?.lookup(call.ids, call.cost);
    if (cached) return cached;
    if (this.redis) {
      try {
        const reply = await this.runRedis(this.redis, call);
        decision = decodeReply(reply, call.ids, call.ruleLists, this.rules, call.cost, 'redis');
        this.cache?.remember(decision, call.cost);
        this.failing = false;
      } catch (err) {
        decision = this.fallback(call, toStoreError(err, this.opts.timeoutMs));
      }
    } else {
      decision = this.runMemory(this.store as MemoryStore, call, 'memory');
    }
    return this.opts.mode === 'shadow' ? this.shadow(decision) : decision;
  }

  private async runRedis(store: RedisStore, call: Prepared): Promise<Reply> {
    const usable = store.usable();
    if (usable !== true) await usable;
    return store.breaker.call(() => withDeadline(store.run(this.opts.algorithm, call.keys, call.argv), this.opts.timeoutMs));
  }

  private runMemory(store: MemoryStore, call: Prepared, source: 'memory' | 'fallback'): Decision {
    const reply = store.run(this.opts.algorithm, call.keys, call.argv, this.now());
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

/**
 * Settles with the store's reply or, after `ms`, with a timeout. When the timer fires, it settles on
 * the next setImmediate so that a reply already sitting in the socket buffer still wins.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(new StoreError('timeout', `no reply from Redis within ${ms} ms`));
      });
    }, ms);
    promise.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

function toStoreError(err: unknown, timeoutMs: number): StoreError {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/Connection is closed|ECONNREFUSED|ECONNRESET|EPIPE|Stream isn't writeable|MaxRetriesPerRequest/i.test(message)) {
    return new StoreError('unavailable', 'Redis connection failed', err);
  }
  void timeoutMs;
  return new StoreError('reply', 'Redis answered with an error', err);
}

const sharedStores = new Map<string, MemoryStore>();
/** Limiters without Redis share one store per prefix, so a block applies to all of them, as in Redis. */
function sharedMemoryStore(prefix: string): MemoryStore {
  let store = sharedStores.get(prefix);
  if (store === undefined) {
    store = new MemoryStore();
    sharedStores.set(prefix, store);
  }
  return store;
}
