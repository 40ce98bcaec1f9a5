import { ArgumentError, describeValue } from '../kernel/errors';
import { toStoreError } from '../stores/deadline';
import type { Decision } from '../kernel/decision';
import type { Reply } from '../scripts/reply';
import { keyScheme, type KeyScheme } from '../scripts/keys';
import { resolveOptions, type LimiterOptions, type ResolvedOptions } from './options';
import type { Rule, RuleInput } from '../config/rules';
import { privateMemoryStore, sharedMemoryStore } from '../stores/memory';
import { RedisStore } from '../stores/redis';
import { adapterOf, checkRequestTimeout } from '../stores/clients';
import { ClusterStore } from '../stores/cluster';
import type { Store } from '../stores/types';
import { registerLimiter, unregisterLimiter } from './registry';
import { acquire, type AcquireOptions, type WaitQueues } from './acquire';
import { Uncounted } from './uncounted';
import { listDecision } from '../kernel/decision';
import { Lists, type ListsInput } from './lists';
import { Events, type EventListener } from './events';
import { HealthRecorder, limiterHealth, type LimiterHealth } from './health';
import { OperatorRecords } from './operator';
import { OverrideTable, type LimiterOverrides } from './overrides';
import { RuleSets, resolveExtraRules } from './rule-sets';
import { cacheCost, callCost, createPlan, createPlans, decodeCall, nowOf, type Call, type PlanState } from './plan';
import { costPositive, costScalar, uncountedByUnit, type CallCost } from './units';
import { StoreFailures, noRoom } from './failure';
import { Refunds } from './refund';
import { assertReservable, reservation, reservedCost, type Cost, type Reservation, type ReserveOptions } from './reserve';
import { reportingFailures } from './settle-failures';
import { block, reset, unblock, type AdminParts, type BlockOptions } from './admin';

export type { BlockOptions } from './admin';
export type { LimiterOverrides, Override, OverrideInput, OverrideSetOptions } from './overrides';
export type { Cost, Reservation, ReserveOptions } from './reserve';

export interface CheckOptions {
  /**
   * Units this call consumes (a non-negative integer; default 1), for every rule; or, for rules that count
   * other units (`unit: 'tokens'`), a cost per unit: `{ requests: 1, tokens: 1200 }`, naming every unit the
   * plan's rules count (docs/budgets.md). Cost 0 consumes nothing.
   */
  cost?: Cost;
  /** Which of the limiter's plans (`limits: { free: [...], pro: [...] }`) applies; default the first. */
  plan?: string;
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
  /**
   * Per-identifier overrides (the `overrides` option, docs/overrides.md): a plan or rules of their own for one
   * identifier, which every check whose identifiers include it uses (the first such identifier's, in the
   * check's order), before the check's own `plan`.
   */
  readonly overrides: LimiterOverrides;
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
  /**
   * A check at an estimate, to settle at the actual cost later (docs/budgets.md): admitted only when the
   * estimate fits every rule, and counted at once. Needs `refunds: true` (else it rejects with a
   * ConfigError).
   */
  reserve(identifiers: string | readonly string[], options?: ReserveOptions): Promise<Reservation>;
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
export const ruleSetPlan: unique symbol = Symbol('floodgate.ruleSetPlan');

/** Internal: a rule set compiled besides the plans (`limiter[ruleSetPlan](limits)`), for `limiter[checkNow]`. */
export type RuleSetHandle = PlanState;

/**
 * The rules a decision was made under, when they may differ from the plan its check named (an override's,
 * a request's rule set): kept only for limiters that have either. The HTTP layer's headers describe them.
 */
const decisionRules = new WeakMap<Decision, readonly Rule[]>();
export const rulesOfDecision = (decision: Decision): readonly Rule[] | undefined => decisionRules.get(decision);

export const listCheck: unique symbol = Symbol('floodgate.listCheck');

/**
 * Internal: `limiter[reserveAt](identifiers, cost, plan, address)` is reserve() with the client's exact
 * address for the lists' IP rules, as checkNow takes it (the HTTP layer's `settle`).
 */
export const reserveAt: unique symbol = Symbol('floodgate.reserveAt');
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
  readonly overrides: LimiterOverrides;
  /** The overrides in force (undefined with the option off: a check then pays nothing for them). */
  private readonly overrideTable: OverrideTable | undefined;
  /** Rule sets compiled besides the plans: overrides' limits, request-dependent limits (rule-sets.ts). */
  private readonly ruleSets: RuleSets;
  private readonly opts: ResolvedOptions;
  /** The default plan, and every plan by name. */
  private readonly main: PlanState;
  private readonly byName: Map<string, PlanState>;
  private readonly store: Store;
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
  /** The failure policy, and what the limiter remembers of a failure (failure.ts). */
  private readonly failures: StoreFailures;
  /** The receipts of admitted checks, for refund() (refund.ts). */
  private readonly refunder: Refunds;
  /** What reset(), block() and unblock() work on (admin.ts). */
  private readonly parts: AdminParts;
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
        ? privateMemoryStore(opts.prefix, opts.memoryMaxKeys)
        : sharedMemoryStore(opts.prefix, opts.memoryMaxKeys);
    this.records = this.store instanceof RedisStore && opts.clock === undefined ? new OperatorRecords(this.store, opts) : undefined;
    if (opts.redis) checkRequestTimeout(adapterOf(opts.redis), opts.timeoutMs, opts.logger);
    this.cacheFirst = !opts.penalty;
    this.uncounted =
      this.store.remote && opts.failure === 'open' ? new Uncounted(opts.clock ?? (() => performance.now()), opts.memoryMaxKeys) : undefined;
    this.keys = keyScheme(opts.prefix, opts.name, opts.algorithm.tag, opts.colocate);
    this.byName = createPlans(opts, this.keys, this.store);
    this.main = this.byName.get(opts.plans[0]!.name)!;
    this.failures = new StoreFailures(opts, this.recorder, this.events, this.uncounted);
    this.refunder = new Refunds(opts, this.store, this.events);
    this.parts = { opts, store: this.store, keys: this.keys, main: this.main, uncounted: this.uncounted };
    // Over locals, not `this`: the overrides' refresh timer reaches this closure, and must not keep the limiter alive.
    const { keys, store } = this;
    this.ruleSets = new RuleSets((rules) => createPlan(opts, keys, store, '', rules));
    const table = new OverrideTable(opts, this.byName, this.ruleSets, this.store);
    this.overrides = table;
    this.overrideTable = table.enabled ? table : undefined;
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
    cost: Cost | undefined,
    plan?: string,
    address?: string,
    ruleSet?: RuleSetHandle,
  ): Decision | Promise<Decision> {
    return this.start('c', identifiers, cost, plan, address, ruleSet);
  }

  /**
   * Internal: the plan of `limits` (rules as `limits` takes them, a request's: http/request-limits.ts),
   * compiled at its first use; an ArgumentError past the bound on distinct rule sets (rule-sets.ts).
   */
  [ruleSetPlan](limits: readonly RuleInput[]): RuleSetHandle {
    return this.ruleSets.plan(resolveExtraRules(this.opts, limits, 'limits'), 'request');
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

  reset(identifiers: string | readonly string[]): Promise<void> {
    return reset(this.parts, identifiers);
  }

  block(identifier: string, options: BlockOptions): Promise<void> {
    return block(this.parts, identifier, options);
  }

  unblock(identifier: string): Promise<void> {
    return unblock(this.parts, identifier);
  }

  refund(decision: Decision): Promise<boolean> {
    return this.refunder.refund(decision);
  }

  reserve(identifiers: string | readonly string[], options?: ReserveOptions): Promise<Reservation> {
    return this[reserveAt](identifiers, options?.cost, options?.plan);
  }

  async [reserveAt](
    identifiers: string | readonly string[],
    cost: Cost | undefined,
    planName?: string,
    address?: string,
  ): Promise<Reservation> {
    assertReservable(this.refunds, this.name);
    let plan = this.planOf(planName);
    if (this.overrideTable !== undefined) {
      await this.overrideTable.pending();
      plan = this.overrideTable.planFor(plan.planner.identifiers(identifiers)) ?? plan;
    }
    // At least 1 of every unit: a unit at or past its limit denies even an estimate of 0 (reserve.ts).
    const estimate = reservedCost(plan.planner.cost(cost));
    const decision = await settle(() => this.start('c', identifiers, estimate, planName, address));
    return reportingFailures(reservation(decision, plan, this.refunder), this.events);
  }

  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision> {
    return acquire(this, this.queues, identifiers, options);
  }

  health(options?: { probe?: boolean }): Promise<LimiterHealth> {
    return limiterHealth(
      this.recorder,
      this.store,
      this.opts.timeoutMs,
      (identifier) => this.peek(identifier),
      () => this.failures.fault !== undefined,
      options,
    );
  }

  subscribe(listener: EventListener): () => void {
    if (typeof listener !== 'function') throw new ArgumentError(`subscribe() takes a function; got ${describeValue(listener)}`);
    return this.events.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const plan of this.byName.values()) plan.cache?.dispose();
    this.overrideTable?.close();
    this.ruleSets.dispose();
    unregisterLimiter(this, this.opts);
    await this.records?.flush();
  }

  /** Validates, then answers from the block cache (synchronously) or asks the store. */
  private start(
    op: 'c' | 'p',
    input: string | readonly string[],
    costInput: unknown,
    planInput: unknown,
    address?: string,
    ruleSet?: RuleSetHandle,
  ): Decision | Promise<Decision> {
    let plan = ruleSet ?? this.planOf(planInput);
    const ids = plan.planner.identifiers(input);
    if (this.overrideTable !== undefined) {
      // The limiter's first check waits for the first read of the overrides (once); then none does.
      const first = this.overrideTable.pending();
      if (first !== undefined) return first.then(() => this.start(op, input, costInput, planInput, address, ruleSet));
      plan = this.overrideTable.planFor(ids) ?? plan;
    }
    const cost = plan.planner.cost(costInput);
    // The lists before anything else: in process, and deny wins over every other answer (a block included).
    if (!this.lists.empty) {
      const listed = this.listed(ids, address, costScalar(cost), plan);
      if (listed !== undefined) return listed;
    }
    // The cache first: a client answered from it costs no key encoding, no script arguments and no promise.
    const cached = this.cacheFirst ? plan.cache?.lookup(ids, typeof cost === 'number' ? cost : cost.arg) : undefined;
    if (cached) return this.enforce(cached, plan, undefined, op);
    return this.evaluate(plan, op, ids, cost);
  }

  /** A check's call to the store, its decision, and (refunds) its receipts kept: check() and reserve(). */
  private async evaluate(plan: PlanState, op: 'c' | 'p', ids: string[], callCostInput: CallCost): Promise<Decision> {
    // The prepared check itself, with its plan added (no copy of it per check).
    const call = plan.planner.prepare(op, ids, callCostInput) as Call;
    call.plan = plan;
    const { program, cache, inflight } = plan;
    const cost = callCost(call);
    const units = plan.planner.units;
    if (!this.store.remote) {
      const reply = this.store.run(program, call.keys, call.argv, { now: nowOf(this.opts), budgetMs: Infinity }) as Reply;
      return this.refunder.keep(call, reply, this.enforce(decodeCall(call, reply, 'memory'), plan));
    }
    // A client whose admissions by the policy alone fill one of its rules: Redis could only deny it.
    const positive = costPositive(cost);
    const full = positive && this.uncounted ? uncountedByUnit.full(this.uncounted, ids, cost, units, plan.planner.rooms) : undefined;
    if (full !== undefined) return this.enforce(noRoom(full, call.cost), plan, undefined, op);
    const started = performance.now();
    // Consuming checks take a place among the identifiers' units in flight first (inflight.ts).
    const counted = inflight !== undefined && op === 'c' && positive;
    // Other checks of these identifiers in flight: a flood, whose admissions by Redis 'open' must count too.
    const crowded = counted && this.uncounted !== undefined && inflight.busy(ids);
    if (counted) {
      const entered = inflight.enter(ids, cost, this.opts.timeoutMs);
      if (entered !== true && !(await entered)) return this.enforce(this.failures.notSent(call, true), plan, undefined, op);
      // While it waited, an earlier check of these identifiers may have been denied.
      const cached = entered !== true && this.cacheFirst ? cache?.lookup(ids, cacheCost(call)) : undefined;
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
      return this.enforce(this.failures.notSent(call, false), plan, undefined, op);
    }
    let decision: Decision;
    let latencyMs: number | undefined;
    // Other checks of these identifiers still in flight when this reply came: their replies may have come in
    // the same read and left before this check resumes, so asking only then would miss the flood.
    let crowdedAtReply = false;
    try {
      const settled = (reply: Reply | undefined, late: boolean): void => {
        if (counted) {
          inflight.leave(ids, cost);
          crowdedAtReply = this.uncounted !== undefined && inflight.busy(ids);
        }
        // A reply after the deadline still teaches the cache: the next check of a denied client stays local.
        if (late && reply !== undefined) cache?.remember(decodeCall(call, reply, 'redis'), cacheCost(call));
      };
      const reply = await this.store.run(program, call.keys, call.argv, { now: nowOf(this.opts), budgetMs, settled });
      latencyMs = performance.now() - sent;
      this.recorder.answered(latencyMs);
      // A first check sent before the client was connected: the registry entry now (a no-op once written).
      if (op === 'c') this.records?.touch();
      decision = decodeCall(call, reply, 'redis');
      cache?.remember(decision, cacheCost(call));
      this.failures.answered();
      if (decision.allowed && this.uncounted !== undefined) {
        // Admitted by Redis, which never counted what the policy admitted for these identifiers: those first.
        const over = uncountedByUnit.over(this.uncounted, decision.states, op === 'p' ? cost : 0, units);
        if (over !== undefined) return this.enforce(noRoom(over, call.cost), plan, latencyMs, op);
        if (counted) {
          const flood = crowded || crowdedAtReply || inflight.busy(ids);
          uncountedByUnit.counted(this.uncounted, ids, cost, units, plan.planner.rooms, flood);
        }
      }
      return this.refunder.keep(call, reply, this.enforce(decision, plan, latencyMs, op));
    } catch (err) {
      decision = this.failures.fallback(call, toStoreError(err), op);
    }
    return this.enforce(decision, plan, undefined, op);
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
    if (this.overrideTable !== undefined || this.ruleSets.size > 0) decisionRules.set(decision, plan.rules);
    return decision;
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
