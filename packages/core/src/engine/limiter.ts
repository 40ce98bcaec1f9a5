import { ArgumentError, ConfigError, StoreError, describeValue } from '../kernel/errors';
import { storeFailureWarning, toStoreError } from '../stores/deadline';
import type { Decision } from '../kernel/decision';
import { decodeReply, type Reply } from '../scripts/reply';
import { encodeIdentifier, keyScheme, type KeyScheme } from '../scripts/keys';
import { resolveOptions, type LimiterOptions, type ResolvedOptions } from './options';
import { parseDuration, type Rule } from '../config/rules';
import { MemoryStore, sharedMemoryStore } from '../stores/memory';
import { RedisStore } from '../stores/redis';
import { adapterOf, checkRequestTimeout } from '../stores/clients';
import { createProgram, type Program } from '../scripts/script';
import { ClusterStore } from '../stores/cluster';
import type { Store } from '../stores/types';
import { registerLimiter, unregisterLimiter } from './registry';
import { acquire, type AcquireOptions, type WaitQueues } from './acquire';
import { BlockCache, evictEverywhere } from './block-cache';
import { CallPlanner, type Prepared } from './call-plan';
import { InFlight } from './inflight';
import { Uncounted, type NoRoom } from './uncounted';
import { listDecision, localDenial } from '../kernel/decision';
import { Lists, type ListsInput } from './lists';
import { Events, type EventListener } from './events';
import { HealthRecorder, type LimiterHealth } from './health';
import { OperatorRecords } from './operator';

export interface CheckOptions {
  /** Units this call consumes (a non-negative integer; default 1). Cost 0 consumes nothing. */
  cost?: number;
  /** Which of the limiter's plans (`limits: { free: [...], pro: [...] }`) applies; default the first. */
  plan?: string;
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
  /** The default plan's rules (the only plan's, when `limits` names none). */
  readonly rules: readonly Rule[];
  /** The plan names of `limits: { free: [...], pro: [...] }`, the default first; [] when it names none. */
  readonly plans: readonly string[];
  /** A plan's rules (the default plan's without a name); throws an ArgumentError for an unknown plan. */
  rulesOf(plan?: string): readonly Rule[];
  readonly failure: ResolvedOptions['failure'];
  readonly mode: ResolvedOptions['mode'];
  /** Checks every rule for every identifier in one store call; consumes only if all admit the cost. */
  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision>;
  /** Whether refund() can give anything back (the `refunds` option). */
  readonly refunds: boolean;
  /**
   * Gives back exactly what an admitted check of this limiter consumed, to the windows or buckets it took
   * it from while they still hold it, in one store call. At most once per decision: true when it was
   * sent, false when there is nothing to give back (a denial, a cached or failure-policy decision, a
   * peek, another limiter's decision, one already refunded, or a limiter without `refunds: true`).
   */
  refund(decision: Decision): Promise<boolean>;
  /** The same decision as check(), consuming nothing. */
  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision>;
  /** Forgets this limiter's counts for these identifiers (manual blocks stay: see unblock). */
  reset(identifiers: string | readonly string[]): Promise<void>;
  /** Denies every check of this identifier, in every limiter with this prefix, for `duration`. */
  block(identifier: string, options: BlockOptions): Promise<void>;
  /** Lifts a block (block()'s or a lockout's) and forgets this limiter's lockout escalation for the identifier. */
  unblock(identifier: string): Promise<void>;
  /** Waits (sleeping, first come first served) until a check passes; gives up after maxWaitMs or on abort. */
  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision>;
  /**
   * Replaces the allow and/or deny list (a list left out stays as it is), validated and compiled as at
   * construction: a malformed entry throws a ConfigError and changes nothing. Takes effect for the next check.
   */
  setLists(lists: ListsInput): void;
  /** Calls `listener` with every event (as the `onEvent` option does) until the returned function is called. */
  subscribe(listener: EventListener): () => void;
  /**
   * The store's health for a readiness probe or a dashboard (health.ts). When the limiter has not heard from
   * its store for a second, it first probes it (a peek of a reserved identifier, within `timeoutMs`), unless
   * `{ probe: false }`. Never rejects.
   */
  health(options?: { probe?: boolean }): Promise<LimiterHealth>;
  close(): Promise<void>;
}

/**
 * Internal (not exported from the package): `limiter[checkNow](identifiers, cost)` is check() that answers
 * a client the block cache already denies synchronously (the Decision itself: no promise, no store call),
 * else a promise of the decision. Invalid identifiers or cost throw the ArgumentError check() rejects with.
 */
export const checkNow: unique symbol = Symbol('floodgate.checkNow');

/**
 * Internal: `limiter[listCheck](identifiers, address, cost)` is the allow/deny list decision (enforced and
 * reported like any decision) for a check's identifiers and the client's exact address, or undefined when
 * neither list has them; `limiter[currentLists]` the lists in force.
 */
export const listCheck: unique symbol = Symbol('floodgate.listCheck');
export const currentLists: unique symbol = Symbol('floodgate.currentLists');

export function createLimiter(options: LimiterOptions): Limiter {
  return new FloodgateLimiter(resolveOptions(options));
}

export class FloodgateLimiter implements Limiter {
  /**
   * Whether `value` is a limiter this class made, itself: not a Proxy over one, nor an object inheriting from
   * one (a private field is neither forwarded by a Proxy nor inherited). Only then may the HTTP layer call
   * its internals (checkNow) instead of the check() a wrapper may have replaced.
   */
  static isOwn(value: unknown): value is FloodgateLimiter {
    return typeof value === 'object' && value !== null && #own in value;
  }
  readonly #own = true;
  readonly name: string;
  readonly prefix: string;
  readonly algorithm: string;
  readonly rules: readonly Rule[];
  readonly plans: readonly string[];
  readonly failure: ResolvedOptions['failure'];
  readonly mode: ResolvedOptions['mode'];
  readonly refunds: boolean;
  private readonly opts: ResolvedOptions;
  /** The default plan, and every plan by name. */
  private readonly main: PlanState;
  private readonly byName = new Map<string, PlanState>();
  /** What each refundable decision consumed, until it is refunded (or collected with the decision). */
  private readonly receipts = new WeakMap<Decision, Consumed>();
  private readonly store: Store;
  /** The `failure: 'local'` limiter, made on first use. */
  private localStore: MemoryStore | undefined;
  /** With `failure: 'open'` on a remote store: the units the policy admitted, per identifier (uncounted.ts). */
  private readonly uncounted: Uncounted | undefined;
  /** Whether a check asks the block cache first: not with `penalty` (a denied check must reach Redis to count). */
  private readonly cacheFirst: boolean;
  private readonly keys: KeyScheme;
  private readonly queues: WaitQueues = new Map();
  private readonly events: Events;
  private readonly recorder = new HealthRecorder();
  /** The registry entry and denial sample for the command line (operator.ts): Redis, real time only. */
  private readonly records: OperatorRecords | undefined;
  private failing = false;
  private unsupportedWarned = false;
  /** The last connection-level failure (timeout, unavailable, circuit open), until the store answers again. */
  private fault: StoreError | undefined;
  private closed = false;
  /** The allow and deny lists, swapped whole by setLists(). */
  private lists: Lists;

  constructor(opts: ResolvedOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.prefix = opts.prefix;
    this.algorithm = opts.algorithm.name;
    this.rules = opts.rules;
    this.plans = opts.plans[0]!.name === '' ? [] : opts.plans.map((p) => p.name);
    this.failure = opts.failure;
    this.mode = opts.mode;
    this.refunds = opts.refunds;
    this.lists = opts.lists;
    registerLimiter(this, opts);
    this.events = new Events(opts.name, opts.onEvent, opts.eventIdentifiers, opts.logger);
    this.store = opts.redis
      ? new (adapterOf(opts.redis).isCluster ? ClusterStore : RedisStore)(opts.redis, opts.logger)
      : opts.clock
        ? new MemoryStore(opts.memoryMaxKeys)
        : sharedMemoryStore(opts.prefix, opts.memoryMaxKeys);
    this.records = this.store instanceof RedisStore && opts.clock === undefined ? new OperatorRecords(this.store, opts) : undefined;
    if (opts.redis) checkRequestTimeout(adapterOf(opts.redis), opts.timeoutMs, opts.logger);
    this.cacheFirst = !opts.penalty;
    this.uncounted =
      this.store.remote && opts.failure === 'open' ? new Uncounted(opts.clock ?? (() => performance.now()), opts.memoryMaxKeys) : undefined;
    this.keys = keyScheme(opts.prefix, opts.name, opts.algorithm.tag, opts.colocate);
    // Each plan's script is built here, once; its block cache and units in flight are its own, as its
    // denials and capacities are. Counts are not: every plan keeps them in the identifier's one key, a
    // field per window, so moving between plans keeps the windows they share.
    for (const plan of opts.plans) {
      const planner = new CallPlanner(opts, this.keys, plan.rules);
      this.byName.set(plan.name, {
        name: plan.name,
        rules: plan.rules,
        planner,
        program: createProgram(opts.algorithm, plan.rules, opts.refunds, opts.lockout),
        cache:
          this.store.remote && opts.blockCacheMax > 0
            ? new BlockCache(
                opts.prefix,
                opts.name,
                opts.blockCacheMax,
                opts.clock ?? (() => performance.now()),
                opts.lockout !== undefined,
              )
            : undefined,
        inflight: this.store.remote ? new InFlight((id) => planner.capacity(id)) : undefined,
      });
    }
    this.main = this.byName.get(opts.plans[0]!.name)!;
  }

  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return settle(() => this.start('c', identifiers, options?.cost, options?.plan));
  }

  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return settle(() => this.start('p', identifiers, options?.cost, options?.plan));
  }

  /** `address`: the client's exact normalised address, for the lists' IP rules (the adapters pass it). */
  [checkNow](
    identifiers: string | readonly string[],
    cost: number | undefined,
    plan?: string,
    address?: string,
  ): Decision | Promise<Decision> {
    return this.start('c', identifiers, cost, plan, address);
  }

  /** The list decision for these identifiers and address (see listCheck), or undefined. */
  [listCheck](ids: readonly string[], address: string | undefined, cost: number, denyOnly?: boolean): Decision | undefined {
    return this.listed(ids, address, cost, this.main, denyOnly);
  }

  private listed(
    ids: readonly string[],
    address: string | undefined,
    cost: number,
    plan: PlanState,
    denyOnly = false,
  ): Decision | undefined {
    const match = this.lists.match(ids, address, denyOnly);
    return match === undefined ? undefined : this.enforce(listDecision(match.list === 'allow', match.identifier, cost), plan);
  }

  /** The lists in force (setLists swaps them whole). */
  get [currentLists](): Lists {
    return this.lists;
  }

  setLists(lists: ListsInput): void {
    this.lists = this.lists.replace(Lists.input(lists));
  }

  rulesOf(plan?: string): readonly Rule[] {
    return this.planOf(plan).rules;
  }

  /** A plan by name (the default for undefined); an ArgumentError for any other value. */
  private planOf(name: unknown): PlanState {
    if (name === undefined) return this.main;
    const plan = typeof name === 'string' && this.plans.length > 0 ? this.byName.get(name) : undefined;
    if (plan === undefined) {
      const known = this.plans.length > 0 ? `known: ${this.plans.join(', ')}` : 'this limiter names no plans';
      throw new ArgumentError(`unknown plan ${describeValue(name)} (${known})`);
    }
    return plan;
  }

  async reset(identifiers: string | readonly string[]): Promise<void> {
    const ids = this.main.planner.identifiers(identifiers);
    // Its counts: the rules' state and, with a lockout, the denials counted toward one (not a lockout in force: a block).
    const keys = ids.flatMap((id) => this.countKeys(encodeIdentifier(id)));
    evictEverywhere(this.prefix, this.name, ids);
    this.uncounted?.forget(ids);
    await this.admin(() => this.store.delete(keys));
  }

  async block(identifier: string, options: BlockOptions): Promise<void> {
    const [id] = this.main.planner.identifiers(identifier);
    if (typeof options !== 'object' || options === null) {
      throw new ConfigError('duration', "is required: block(identifier, { duration: '10m', reason })");
    }
    const durationMs = parseDuration(options.duration, 'duration');
    const reason = options.reason ?? '';
    if (typeof reason !== 'string' || reason.length > 256) {
      throw new ConfigError('reason', `must be a string of at most 256 characters; got ${describeValue(reason)}`);
    }
    const enc = encodeIdentifier(id!);
    const { planner } = this.main;
    await this.admin(() =>
      this.store.block(this.keys.block(enc), this.keys.index(enc), durationMs, reason, planner.nowArg(), planner.pad, this.now()),
    );
  }

  async unblock(identifier: string): Promise<void> {
    const [id] = this.main.planner.identifiers(identifier);
    evictEverywhere(this.prefix, undefined, [id!]);
    const enc = encodeIdentifier(id!);
    // A lockout is a block: lifted, and this limiter's escalation for the identifier forgotten with it; the
    // block's entry in the block index goes in the same call.
    const others = this.opts.lockout ? [this.keys.lockout(enc)] : [];
    const { planner } = this.main;
    await this.admin(() =>
      this.store.unblock(this.keys.block(enc), this.keys.index(enc), others, planner.nowArg(), planner.pad, this.now()),
    );
  }

  private countKeys(enc: string): string[] {
    return this.opts.lockout ? [this.keys.state(enc), this.keys.lockout(enc)] : [this.keys.state(enc)];
  }

  async refund(decision: Decision): Promise<boolean> {
    if (typeof decision !== 'object' || decision === null) {
      throw new ArgumentError(`refund() takes a decision this limiter's check() returned; got ${describeValue(decision)}`);
    }
    const consumed = this.receipts.get(decision);
    if (consumed === undefined) return false;
    // At most once: forgotten before it is sent, so a second refund (or one racing this) gives nothing.
    this.receipts.delete(decision);
    // A denial cached since this check may no longer hold once its units are back.
    evictEverywhere(this.prefix, this.name, consumed.ids);
    const { keys, receipts, cost } = consumed;
    await this.admin(() =>
      this.store.refund(this.opts.algorithm, keys, receipts, cost, { now: this.now(), budgetMs: this.opts.timeoutMs }),
    );
    if (this.events.active) this.events.refund(consumed.ids, cost);
    return true;
  }

  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision> {
    return acquire(this, this.queues, identifiers, options);
  }

  async health(options?: { probe?: boolean }): Promise<LimiterHealth> {
    const probe = options?.probe ?? true;
    let probed = false;
    const idleMs = Date.now() - (this.recorder.lastOkAt ?? 0);
    if (probe && this.store.remote && idleMs > 1_000) {
      probed = true;
      // A real call of this limiter's own script, consuming nothing: connection, ACL and scripts at once.
      await this.peek(HEALTH_IDENTIFIER).catch(() => undefined);
    }
    const breaker = (this.store as { breakerOpen?: boolean }).breakerOpen;
    return this.recorder.report(this.store.remote, breaker, this.fault !== undefined, this.opts.timeoutMs, probed);
  }

  subscribe(listener: EventListener): () => void {
    if (typeof listener !== 'function') throw new ArgumentError(`subscribe() takes a function; got ${describeValue(listener)}`);
    return this.events.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const plan of this.byName.values()) plan.cache?.dispose();
    unregisterLimiter(this, this.opts);
    await this.records?.flush();
  }

  private now(): number {
    return this.opts.clock ? this.opts.clock() : Date.now();
  }

  private async admin(op: () => Promise<void> | void): Promise<void> {
    try {
      await op();
    } catch (err) {
      throw err instanceof StoreError ? err : new StoreError('reply', 'Redis rejected the command', err);
    }
  }

  /** Validates, then answers from the block cache (synchronously) or asks the store. */
  private start(
    op: 'c' | 'p',
    input: string | readonly string[],
    costInput: unknown,
    planInput: unknown,
    address?: string,
  ): Decision | Promise<Decision> {
    const plan = this.planOf(planInput);
    const ids = plan.planner.identifiers(input);
    const cost = plan.planner.cost(costInput);
    // The lists before anything else: in process, and deny wins over every other answer (a block included).
    if (!this.lists.empty) {
      const listed = this.listed(ids, address, cost, plan);
      if (listed !== undefined) return listed;
    }
    // The cache first: a client answered from it costs no key encoding, no script arguments and no promise.
    const cached = this.cacheFirst ? plan.cache?.lookup(ids, cost) : undefined;
    if (cached) return this.enforce(cached, plan, undefined, op);
    return this.evaluate(plan, op, ids, cost);
  }

  private async evaluate(plan: PlanState, op: 'c' | 'p', ids: string[], cost: number): Promise<Decision> {
    // The prepared check itself, with its plan added (no copy of it per check).
    const call = plan.planner.prepare(op, ids, cost) as Call;
    call.plan = plan;
    const { program, cache, inflight } = plan;
    if (!this.store.remote) {
      const reply = this.store.run(program, call.keys, call.argv, { now: this.now(), budgetMs: Infinity }) as Reply;
      return this.keepReceipts(call, reply, this.enforce(this.decode(call, reply, 'memory'), plan));
    }
    // A client whose admissions by the policy alone fill one of its rules: Redis could only deny it.
    const full = cost > 0 ? this.uncounted?.full(ids, cost, plan.planner.rooms) : undefined;
    if (full !== undefined) return this.enforce(this.noRoom(full, cost), plan, undefined, op);
    const started = performance.now();
    // Consuming checks take a place among the identifiers' units in flight first (inflight.ts).
    const counted = inflight !== undefined && op === 'c' && cost > 0;
    // Other checks of these identifiers in flight: a flood, whose admissions by Redis 'open' must count too.
    const crowded = counted && this.uncounted !== undefined && inflight.busy(ids);
    if (counted) {
      const entered = inflight.enter(ids, cost, this.opts.timeoutMs);
      if (entered !== true && !(await entered)) return this.enforce(this.notSent(call, true), plan, undefined, op);
      // While it waited, an earlier check of these identifiers may have been denied.
      const cached = entered !== true && this.cacheFirst ? cache?.lookup(ids, cost) : undefined;
      if (cached) {
        inflight.leave(ids, cost);
        return this.enforce(cached, plan, undefined, op);
      }
    }
    const sent = performance.now();
    const budgetMs = this.opts.timeoutMs - (sent - started);
    // The registry entry for the command line, when due, in the same write as this check (operator.ts).
    if (op === 'c') this.records?.touch();
    if (budgetMs < 1) {
      // Let in with no time left to ask: not sent (it could only be counted after its caller gave up).
      if (counted) inflight.leave(ids, cost);
      return this.enforce(this.notSent(call, false), plan, undefined, op);
    }
    let decision: Decision;
    let latencyMs: number | undefined;
    try {
      const settled = (reply: Reply | undefined, late: boolean): void => {
        if (counted) inflight.leave(ids, cost);
        // A reply after the deadline still teaches the cache: the next check of a denied client stays local.
        if (late && reply !== undefined) cache?.remember(this.decode(call, reply, 'redis'), call.cost);
      };
      const reply = await this.store.run(program, call.keys, call.argv, { now: this.now(), budgetMs, settled });
      latencyMs = performance.now() - sent;
      this.recorder.answered(latencyMs);
      // A first check sent before the client was connected: the registry entry now (a no-op once written).
      if (op === 'c') this.records?.touch();
      decision = this.decode(call, reply, 'redis');
      cache?.remember(decision, call.cost);
      this.failing = false;
      this.fault = undefined;
      if (decision.allowed && this.uncounted !== undefined) {
        // Admitted by Redis, which never counted what the policy admitted for these identifiers: those first.
        const over = this.uncounted.over(decision.states, op === 'p' ? cost : 0);
        if (over !== undefined) return this.enforce(this.noRoom(over, cost), plan, latencyMs, op);
        if (counted) this.uncounted.counted(ids, cost, plan.planner.rooms, crowded || inflight.busy(ids));
      }
      return this.keepReceipts(call, reply, this.enforce(decision, plan, latencyMs, op));
    } catch (err) {
      decision = this.fallback(call, toStoreError(err), op);
    }
    return this.enforce(decision, plan, undefined, op);
  }

  /** A refundable program's admitted, consuming check: what it consumed where, for refund(). */
  private keepReceipts(call: Call, reply: Reply, decision: Decision): Decision {
    if (!call.plan.program.refundable || !decision.allowed || Number(reply[2]) !== 1) return decision;
    const n = call.ids.length;
    const consumed: Consumed = { ids: call.ids, keys: [], receipts: [], cost: call.cost };
    for (let i = 0; i < n; i++) {
      const receipt = String(reply[reply.length - n + i]);
      if (receipt === '') continue;
      consumed.keys.push(call.keys[2 * i]!);
      consumed.receipts.push(receipt);
    }
    if (consumed.keys.length > 0) this.receipts.set(decision, consumed);
    return decision;
  }

  private decode(call: Call, reply: Reply, source: 'redis' | 'memory' | 'fallback'): Decision {
    return decodeReply(reply, call.ids, call.ruleLists, call.plan.rules, call.cost, source);
  }

  /**
   * A check that waited for room among its identifiers' units in flight and was never sent: it gave up at
   * its deadline (`gaveUp`), or was let in with no time left. The checks ahead of it held the identifier's
   * whole capacity. When those failed (the store is failing), 'closed' and 'local' apply as for them, and
   * 'open' denies: they took the policy's admissions already. Otherwise a check that gave up is denied (that
   * many units were being decided), and one let in too late failed in this process's own backlog: overload.
   */
  private notSent(call: Call, gaveUp: boolean): Decision {
    const fault = this.fault;
    if (fault !== undefined && this.failure !== 'open') {
      return this.fallback(call, new StoreError(fault.kind, `not sent: ${fault.message.replace(/^floodgate: /, '')}`), 'c');
    }
    if (fault !== undefined || gaveUp) return this.overCapacity(call);
    return this.fallback(call, new StoreError('overload', `not sent: its ${this.opts.timeoutMs} ms went waiting in this process`), 'c');
  }

  /** Checks that waited for room among an identifier's units in flight until their deadline: denied. */
  private overCapacity({ ids, cost, plan }: Call): Decision {
    const id = ids.find((i) => plan.planner.capacity(i) !== Infinity) ?? ids[0]!;
    return localDenial('limit', id, this.opts.timeoutMs, cost);
  }

  /**
   * A check denied in this process because of what the policy admitted without the store (uncounted.ts):
   * the identifier used its limit here already.
   */
  private noRoom({ identifier, retryAfterMs }: NoRoom, cost: number): Decision {
    return localDenial('limit', identifier, retryAfterMs, cost);
  }

  private fallback(call: Call, error: StoreError, op: 'c' | 'p'): Decision {
    if (error.kind !== 'overload' && error.kind !== 'reply') this.fault = error;
    this.recorder.failed(error);
    if (this.events.active) this.events.storeError(error, this.failure);
    // Once while failing; a server that cannot run the scripts is said so even when another failure came first.
    if (!this.failing || (error.kind === 'unsupported' && !this.unsupportedWarned)) {
      this.failing = true;
      if (error.kind === 'unsupported') this.unsupportedWarned = true;
      this.opts.logger.warn(storeFailureWarning(`limiter '${this.name}'`, error, this.failure));
    }
    // An identifier known to be over its limit stays denied, whatever the policy (docs/security.md).
    const known = call.plan.cache?.known(call.ids, call.cost);
    if (known) return { ...known, error };
    // Overload is not an outage: Redis was answering, but this process had sent more than it could answer
    // in time. Admitting by 'open' would let load buy admissions, so overload sheds the request instead
    // (503 with Retry-After in the adapters), as 'closed' does; 'local' decides in process as it always does.
    const policy = error.kind === 'overload' && this.failure === 'open' ? 'closed' : this.failure;
    if (policy === 'local') {
      this.localStore ??= new MemoryStore(this.opts.memoryMaxKeys);
      const reply = this.localStore.run(call.plan.program, call.keys, call.argv, { now: this.now(), budgetMs: Infinity });
      return { ...this.decode(call, reply, 'fallback'), error };
    }
    const allowed = policy === 'open';
    // 'open' admits, but never more than a rule's capacity per identifier and window from this process: a
    // flood's own checks would otherwise be admitted again at every deadline, uncounted (uncounted.ts).
    const uncounted = allowed ? this.uncounted : undefined;
    if (uncounted !== undefined) {
      const none = uncounted.admit(call.ids, call.cost, call.plan.planner.rooms, op === 'c');
      if (none !== undefined) return { ...this.noRoom(none, call.cost), error };
    }
    const decision: Decision = {
      allowed,
      source: 'fallback',
      limit: Infinity,
      windowMs: 0,
      remaining: Infinity,
      resetMs: 0,
      retryAfterMs: allowed ? 0 : Math.min(1000, this.opts.timeoutMs * 4),
      cost: call.cost,
      states: [],
      error,
    };
    if (!allowed) decision.reason = 'store-unavailable';
    return decision;
  }

  /**
   * Every decision's last step: shadow mode turns a denial into an allowed decision marked shadowDenied
   * (and a shadow-deny event), and listeners get the decision event. `op`: a remote check ('c') or peek.
   */
  private enforce(decision: Decision, plan: PlanState, latencyMs?: number, op?: 'c' | 'p'): Decision {
    // A denial a check gave (not a peek's, not the failure policy's) enters the denial sample (operator.ts).
    if (
      op === 'c' &&
      this.records !== undefined &&
      !decision.allowed &&
      decision.identifier !== undefined &&
      decision.reason !== 'store-unavailable'
    ) {
      this.records.denied(decision.identifier);
    }
    if (this.opts.mode === 'shadow' && !decision.allowed) {
      if (decision.reason !== 'store-unavailable' && this.events.active) this.events.shadowDeny(decision);
      decision = { ...decision, allowed: true, reason: undefined, retryAfterMs: 0, shadowDenied: true };
    }
    if (this.events.active) this.events.decision(decision, plan.name === '' ? undefined : plan.name, latencyMs);
    return decision;
  }
}

/**
 * One plan of a limiter (the only one when `limits` names none): its rules, its script, and the per-plan
 * state of the checks made under it.
 */
interface PlanState {
  readonly name: string;
  readonly rules: readonly Rule[];
  readonly planner: CallPlanner;
  /** The algorithm and its scripts for these rules. */
  readonly program: Program;
  /**
   * Denials remembered in-process (Redis only), asked first unless `penalty` is on, and by every check when
   * the store cannot answer. Per plan: a client denied under one plan may be admitted under another.
   */
  readonly cache: BlockCache | undefined;
  /** Units of checks in flight to Redis, per identifier, capped by this plan's capacities (inflight.ts). */
  readonly inflight: InFlight | undefined;
}

/** A prepared check and the plan it runs under. */
interface Call extends Prepared {
  plan: PlanState;
}

/** What health() peeks at to probe an idle store (a peek consumes nothing, whoever else uses the identifier). */
const HEALTH_IDENTIFIER = '~floodgate:health';

/** What a refundable check consumed: per state key, the receipt its script answered. */
interface Consumed {
  ids: string[];
  keys: string[];
  receipts: string[];
  cost: number;
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
