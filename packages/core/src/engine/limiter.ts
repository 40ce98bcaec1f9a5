import { ArgumentError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { keyScheme } from '../scripts/keys';
import { resolveOptions, type LimiterOptions, type ResolvedOptions } from './options';
import type { Rule, RuleInput } from '../config/rules';
import { privateMemoryStore, sharedMemoryStore } from '../stores/memory';
import { RedisStore } from '../stores/redis';
import { adapterOf, checkRequestTimeout } from '../stores/clients';
import { ClusterStore } from '../stores/cluster';
import type { Store } from '../stores/types';
import { registerLimiter, unregisterLimiter } from './registry';
import { acquire, type AcquireOptions, type WaitQueues } from './acquire';
import { Lists, type ListsInput } from './lists';
import { Events, type EventListener } from './events';
import { HealthRecorder, limiterHealth, type LimiterHealth } from './health';
import { OperatorRecords } from './operator';
import { OverrideTable, type LimiterOverrides } from './overrides';
import { RuleSets, resolveExtraRules } from './rule-sets';
import { createPlan, createPlans, type PlanState } from './plan';
import { StoreFailures } from './failure';
import { OpenAccount } from './open-account';
import { Refunds } from './refund';
import { assertReservable, reservation, reservedCost, type Cost, type Reservation, type ReserveOptions } from './reserve';
import { reportingFailures } from './settle-failures';
import { block, reset, unblock, type AdminParts, type BlockOptions } from './admin';
import { Pipeline, settle } from './pipeline';
import type { CheckOptions, Limiter } from './limiter-api';

export type { BlockOptions } from './admin';
export { rulesOfDecision } from './pipeline';
export type { LimiterOverrides, Override, OverrideInput, OverrideSetOptions } from './overrides';
export type { Cost, Reservation, ReserveOptions } from './reserve';
export type { CheckOptions, Limiter } from './limiter-api';

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

export const listCheck: unique symbol = Symbol('floodgate.listCheck');

/**
 * Internal: `limiter[reserveAt](identifiers, cost, plan, address)` is reserve() with the client's exact
 * address for the lists' IP rules, as checkNow takes it (the HTTP layer's `settle`).
 */
export const reserveAt: unique symbol = Symbol('floodgate.reserveAt');
export const currentLists: unique symbol = Symbol('floodgate.currentLists');

/**
 * Internal: `limiter[keepWhole]()` asks the limiter's store to send the checks this turn starts in as few
 * script calls as it can (up to 1,000 checks a call, not BATCH_MAX: stores/turn-batches.ts), for a request
 * that carries many checks (the HTTP layer's keepWhole(), a tRPC batch). Until the end of the turn.
 */
export const keepWhole: unique symbol = Symbol('floodgate.keepWhole');

export function createLimiter(options: LimiterOptions): Limiter {
  return new FloodgateLimiter(resolveOptions(options));
}

/**
 * A limiter's wiring (its parts, made once) and its API over them; a check's way through them is
 * pipeline.ts.
 */
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
  /** Every plan by name. */
  private readonly byName: Map<string, PlanState>;
  private readonly store: Store;
  /** With `failure: 'open'` on a remote store: what the policy admitted, per identifier (open-account.ts). */
  private readonly open: OpenAccount | undefined;
  private readonly queues: WaitQueues = new Map();
  private readonly events: Events;
  private readonly recorder: HealthRecorder;
  /** The registry entry and denial sample for the command line (operator.ts): Redis, real time only. */
  private readonly records: OperatorRecords | undefined;
  /** The failure policy, and what the limiter remembers of a failure (failure.ts). */
  private readonly failures: StoreFailures;
  /** The receipts of admitted checks, for refund() (refund.ts). */
  private readonly refunder: Refunds;
  /** What reset(), block() and unblock() work on (admin.ts). */
  private readonly parts: AdminParts;
  /** A check's way through the parts (pipeline.ts). */
  private readonly pipeline: Pipeline;
  private closed = false;

  /** `store`: a store of a test's own (engine/testing.ts) in place of the one the options make. */
  constructor(opts: ResolvedOptions, store?: Store) {
    this.opts = opts;
    this.name = opts.name;
    this.prefix = opts.prefix;
    this.algorithm = opts.algorithm.name;
    this.rules = opts.rules;
    this.plans = opts.plans[0]!.name === '' ? [] : opts.plans.map((p) => p.name);
    this.failure = opts.failure;
    this.mode = opts.mode;
    this.refunds = opts.refunds;
    registerLimiter(this, opts);
    this.events = new Events(opts.name, opts.onEvent, opts.eventIdentifiers, opts.logger);
    this.recorder = new HealthRecorder(opts.runtime.wall);
    this.store = store ?? storeOf(opts);
    this.records = this.store instanceof RedisStore && opts.clock === undefined ? new OperatorRecords(this.store, opts) : undefined;
    if (opts.redis) checkRequestTimeout(adapterOf(opts.redis), opts.timeoutMs, opts.logger);
    this.open =
      this.store.remote && opts.failure === 'open' ? new OpenAccount(opts.clock ?? opts.runtime.now, opts.memoryMaxKeys) : undefined;
    const keys = keyScheme(opts.prefix, opts.name, opts.algorithm.tag, opts.colocate);
    this.byName = createPlans(opts, keys, this.store);
    const main = this.byName.get(opts.plans[0]!.name)!;
    this.failures = new StoreFailures(opts, this.recorder, this.events, this.open);
    this.refunder = new Refunds(opts, this.store, this.events);
    this.parts = { opts, store: this.store, keys, main, open: this.open };
    // Over locals, not `this`: the overrides' refresh timer reaches this closure, and must not keep the limiter alive.
    const own = this.store;
    this.ruleSets = new RuleSets((rules) => createPlan(opts, keys, own, '', rules));
    const table = new OverrideTable(opts, this.byName, this.ruleSets, this.store);
    this.overrides = table;
    this.overrideTable = table.enabled ? table : undefined;
    this.pipeline = new Pipeline({
      opts,
      store: this.store,
      main,
      byName: this.byName,
      overrideTable: this.overrideTable,
      ruleSets: this.ruleSets,
      events: this.events,
      recorder: this.recorder,
      records: this.records,
      failures: this.failures,
      open: this.open,
      refunder: this.refunder,
    });
  }

  check(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return settle(() => this.pipeline.start('c', identifiers, options?.cost, options?.plan));
  }

  peek(identifiers: string | readonly string[], options?: CheckOptions): Promise<Decision> {
    return settle(() => this.pipeline.start('p', identifiers, options?.cost, options?.plan));
  }

  /** `address`: the client's exact normalised address, for the lists' IP rules (the adapters pass it). */
  [checkNow](
    identifiers: string | readonly string[],
    cost: Cost | undefined,
    plan?: string,
    address?: string,
    ruleSet?: RuleSetHandle,
  ): Decision | Promise<Decision> {
    return this.pipeline.start('c', identifiers, cost, plan, address, ruleSet);
  }

  /**
   * Internal: the plan of `limits` (rules as `limits` takes them, a request's: http/request-limits.ts),
   * compiled at its first use; an ArgumentError past the bound on distinct rule sets (rule-sets.ts).
   */
  [ruleSetPlan](limits: readonly RuleInput[]): RuleSetHandle {
    return this.ruleSets.plan(resolveExtraRules(this.opts, limits, 'limits'), 'request');
  }

  /** This turn's checks in whole batches (see keepWhole). */
  [keepWhole](): void {
    this.store.keepWhole();
  }

  /** The list decision for these identifiers and address (see listCheck), or undefined. */
  [listCheck](ids: readonly string[], address: string | undefined, cost: number, denyOnly?: boolean): Decision | undefined {
    return this.pipeline.listed(ids, address, cost, this.parts.main, denyOnly);
  }

  /** The lists in force (setLists swaps them whole). */
  get [currentLists](): Lists {
    return this.pipeline.lists;
  }

  setLists(lists: ListsInput): void {
    this.pipeline.lists = this.pipeline.lists.replace(Lists.input(lists));
  }

  rulesOf(plan?: string): readonly Rule[] {
    return this.pipeline.planOf(plan).rules;
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
    let plan = this.pipeline.planOf(planName);
    if (this.overrideTable !== undefined) {
      await this.overrideTable.pending();
      plan = this.overrideTable.planFor(plan.planner.identifiers(identifiers)) ?? plan;
    }
    // At least 1 of every unit: a unit at or past its limit denies even an estimate of 0 (reserve.ts).
    const estimate = reservedCost(plan.planner.cost(cost));
    const decision = await settle(() => this.pipeline.start('c', identifiers, estimate, planName, address));
    return reportingFailures(reservation(decision, plan, this.refunder), this.events);
  }

  acquire(identifiers: string | readonly string[], options?: AcquireOptions): Promise<Decision> {
    return acquire(this, this.queues, identifiers, options);
  }

  async health(options?: { probe?: boolean }): Promise<LimiterHealth> {
    const report = await limiterHealth(
      this.recorder,
      this.store,
      this.opts.timeoutMs,
      // A peek that is no decision: no decision event, whatever the listeners count (pipeline.ts).
      (identifier) => settle(() => this.pipeline.start('h', identifier, undefined, undefined)),
      () => this.failures.fault !== undefined,
      options,
    );
    // A readiness probe's question is counted as what it is; a scrape's read ({ probe: false }) is not.
    if (options?.probe !== false && this.events.active) this.events.healthCheck(report.status, report.probed);
    return report;
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
}

/** The store the options make: Redis (single or Cluster) on the limiter's runtime, else memory. */
function storeOf(opts: ResolvedOptions): Store {
  if (opts.redis) return new (adapterOf(opts.redis).isCluster ? ClusterStore : RedisStore)(opts.redis, opts.logger, opts.runtime);
  return opts.clock ? privateMemoryStore(opts.prefix, opts.memoryMaxKeys) : sharedMemoryStore(opts.prefix, opts.memoryMaxKeys);
}
