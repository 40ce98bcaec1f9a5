import { ArgumentError, describeValue } from '../kernel/errors';
import { listDecision, type Decision } from '../kernel/decision';
import { toStoreError } from '../stores/deadline';
import type { Reply } from '../scripts/reply';
import type { Rule } from '../config/rules';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import type { Lists } from './lists';
import type { Events } from './events';
import type { HealthRecorder } from './health';
import type { OperatorRecords } from './operator';
import type { OverrideTable } from './overrides';
import type { RuleSets } from './rule-sets';
import { cacheCost, callCost, decodeCall, nowOf, type Call, type PlanState } from './plan';
import { costPositive, costScalar, type CallCost } from './units';
import type { StoreFailures } from './failure';
import type { OpenAccount } from './open-account';
import type { Refunds } from './refund';
import { Passage } from './inflight';

/*
 * A check's way through a limiter (docs/design.md, section 2): its plan (an override's first), the allow and
 * deny lists, the block cache, then the store. On a remote store: what 'open' admitted of its identifiers
 * (open-account.ts), its place among their units in flight (inflight.ts), the call within what is left of
 * the deadline, and the failure policy when the store did not answer (failure.ts). Every decision ends in
 * enforce(): shadow mode, the events, the denial sample. limiter.ts wires the parts together.
 */

/** What a check runs on: the limiter's parts (limiter.ts makes them). */
export interface PipelineParts {
  readonly opts: ResolvedOptions;
  readonly store: Store;
  /** The default plan, and every plan by name. */
  readonly main: PlanState;
  readonly byName: ReadonlyMap<string, PlanState>;
  /** The overrides in force (undefined with the option off: a check then pays nothing for them). */
  readonly overrideTable: OverrideTable | undefined;
  readonly ruleSets: RuleSets;
  readonly events: Events;
  readonly recorder: HealthRecorder;
  /** The registry entry and denial sample for the command line (operator.ts): Redis, real time only. */
  readonly records: OperatorRecords | undefined;
  readonly failures: StoreFailures;
  /** With `failure: 'open'` on a remote store: what the policy admitted, per identifier (open-account.ts). */
  readonly open: OpenAccount | undefined;
  readonly refunder: Refunds;
}

/**
 * The rules a decision was made under, when they may differ from the plan its check named (an override's,
 * a request's rule set): kept only for limiters that have either. The HTTP layer's headers describe them.
 */
const decisionRules = new WeakMap<Decision, readonly Rule[]>();
export const rulesOfDecision = (decision: Decision): readonly Rule[] | undefined => decisionRules.get(decision);

/**
 * What a pipeline run is: a check ('c'), a peek ('p'), or health()'s probe ('h'), a peek that is no
 * decision: it reaches no listener (a probe is counted by its own health-check event, health.ts). Below
 * the pipeline, a probe is a peek.
 */
export type Op = 'c' | 'p' | 'h';
const asStoreOp = (op: Op): 'c' | 'p' => (op === 'h' ? 'p' : op);

/** A reply that came after its check's deadline still teaches the cache: the next check of a denied client stays local. */
function teachLate(call: Call, reply: Reply): void {
  call.plan.cache?.remember(decodeCall(call, reply, 'redis'), cacheCost(call));
}

export class Pipeline {
  /** The allow and deny lists, swapped whole by setLists(). */
  lists: Lists;
  /** Whether a check asks the block cache first: not with `penalty` (a denied check must reach Redis to count). */
  private readonly cacheFirst: boolean;
  private readonly plans: readonly string[];

  constructor(private readonly parts: PipelineParts) {
    this.lists = parts.opts.lists;
    this.cacheFirst = !parts.opts.penalty;
    this.plans = parts.opts.plans[0]!.name === '' ? [] : parts.opts.plans.map((p) => p.name);
  }

  /** A plan by name (the default for undefined); an ArgumentError for any other value. */
  planOf(name: unknown): PlanState {
    if (name === undefined) return this.parts.main;
    const plan = typeof name === 'string' && this.plans.length > 0 ? this.parts.byName.get(name) : undefined;
    if (plan === undefined) {
      const known = this.plans.length > 0 ? `known: ${this.plans.join(', ')}` : 'this limiter names no plans';
      throw new ArgumentError(`unknown plan ${describeValue(name)} (${known})`);
    }
    return plan;
  }

  /** The list decision for these identifiers and address under `plan`, enforced, or undefined. */
  listed(ids: readonly string[], address: string | undefined, cost: number, plan: PlanState, denyOnly = false): Decision | undefined {
    const match = this.lists.match(ids, address, denyOnly);
    return match === undefined ? undefined : this.enforce(listDecision(match.list === 'allow', match.identifier, cost), plan);
  }

  /** Validates, then answers from the block cache (synchronously) or asks the store. */
  start(
    op: Op,
    input: string | readonly string[],
    costInput: unknown,
    planInput: unknown,
    address?: string,
    ruleSet?: PlanState,
  ): Decision | Promise<Decision> {
    let plan = ruleSet ?? this.planOf(planInput);
    const ids = plan.planner.identifiers(input);
    const table = this.parts.overrideTable;
    if (table !== undefined) {
      // The limiter's first check waits for the first read of the overrides (once); then none does.
      const first = table.pending();
      if (first !== undefined) return first.then(() => this.start(op, input, costInput, planInput, address, ruleSet));
      plan = table.planFor(ids) ?? plan;
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
  private async evaluate(plan: PlanState, op: Op, ids: string[], callCostInput: CallCost): Promise<Decision> {
    const { opts, store, failures, open, records, refunder } = this.parts;
    // The prepared check itself, with its plan added (no copy of it per check).
    const call = plan.planner.prepare(asStoreOp(op), ids, callCostInput) as Call;
    call.plan = plan;
    const { program, cache } = plan;
    if (!store.remote) {
      const reply = store.run(program, call.keys, call.argv, { now: nowOf(opts), budgetMs: Infinity }) as Reply;
      return refunder.keep(call, reply, this.enforce(decodeCall(call, reply, 'memory'), plan));
    }
    // A client whose admissions by the policy alone fill one of its rules: Redis could only deny it.
    const refused = open?.refuse(call);
    if (refused !== undefined) return this.enforce(refused, plan, undefined, op);
    const clock = opts.runtime.now;
    const started = clock();
    const cost = callCost(call);
    // Consuming checks take a place among the identifiers' units in flight first (inflight.ts).
    const flight = op === 'c' && costPositive(cost) ? plan.inflight : undefined;
    const passage = new Passage(flight, ids, cost, open !== undefined, call, teachLate);
    // When it leaves: when it started, unless it waited for its place (a clock read is a call into Node's C++).
    let sent = started;
    if (passage.counted) {
      const entered = passage.enter(opts.timeoutMs);
      if (entered !== true) {
        if (!(await entered)) return this.enforce(failures.notSent(call, true), plan, undefined, op);
        sent = clock();
        // While it waited, an earlier check of these identifiers may have been denied.
        const cached = this.cacheFirst ? cache?.lookup(ids, cacheCost(call)) : undefined;
        if (cached) {
          passage.leave();
          return this.enforce(cached, plan, undefined, op);
        }
      }
    }
    passage.budgetMs = opts.timeoutMs - (sent - started);
    passage.at = sent;
    passage.now = nowOf(opts);
    // The registry entry for the command line, when due, in the same write as this check (operator.ts).
    if (op === 'c') records?.touch();
    if (passage.budgetMs < 1) {
      // Let in with no time left to ask: not sent (it could only be counted after its caller gave up).
      passage.leave();
      return this.enforce(failures.notSent(call, false), plan, undefined, op);
    }
    let decision: Decision;
    try {
      const reply = await store.run(program, call.keys, call.argv, passage);
      const latencyMs = clock() - sent;
      this.parts.recorder.answered(latencyMs);
      // A first check sent before the client was connected: the registry entry now (a no-op once written).
      if (op === 'c') records?.touch();
      decision = decodeCall(call, reply, 'redis');
      cache?.remember(decision, cacheCost(call));
      failures.answered();
      // Admitted by Redis, which never counted what the policy admitted for these identifiers: those first.
      const over = decision.allowed ? open?.answered(call, decision, asStoreOp(op), passage.counted, passage.flood) : undefined;
      if (over !== undefined) return this.enforce(over, plan, latencyMs, op);
      return refunder.keep(call, reply, this.enforce(decision, plan, latencyMs, op));
    } catch (err) {
      decision = failures.fallback(call, toStoreError(err), asStoreOp(op));
    }
    return this.enforce(decision, plan, undefined, op);
  }

  /**
   * Every decision's last step: shadow mode turns a denial into an allowed decision marked shadowDenied
   * (and a shadow-deny event), and listeners get the decision event (a probe's none). `op`: a remote
   * check ('c'), peek ('p') or health()'s probe ('h').
   */
  enforce(decision: Decision, plan: PlanState, latencyMs?: number, op?: Op): Decision {
    const { opts, events, records } = this.parts;
    // A denial a check gave (not a peek's, not the failure policy's) enters the denial sample (operator.ts).
    if (
      op === 'c' &&
      records !== undefined &&
      !decision.allowed &&
      decision.identifier !== undefined &&
      decision.reason !== 'store-unavailable'
    ) {
      records.denied(decision.identifier);
    }
    const reported = events.active && op !== 'h';
    if (opts.mode === 'shadow' && !decision.allowed) {
      if (decision.reason !== 'store-unavailable' && reported) events.shadowDeny(decision);
      decision = { ...decision, allowed: true, reason: undefined, retryAfterMs: 0, shadowDenied: true };
    }
    if (reported) events.decision(decision, plan.name === '' ? undefined : plan.name, latencyMs);
    if (this.parts.overrideTable !== undefined || this.parts.ruleSets.size > 0) decisionRules.set(decision, plan.rules);
    return decision;
  }
}

/** The promise API over start(): a synchronous answer resolved, a synchronous throw rejected. */
export function settle(start: () => Decision | Promise<Decision>): Promise<Decision> {
  try {
    const decision = start();
    return decision instanceof Promise ? decision : Promise.resolve(decision);
  } catch (err) {
    return Promise.reject(err);
  }
}
