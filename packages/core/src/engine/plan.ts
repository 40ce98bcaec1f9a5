import type { Decision } from '../kernel/decision';
import type { Rule } from '../config/rules';
import { decodeReply, type Reply } from '../scripts/reply';
import type { KeyScheme } from '../scripts/keys';
import { createProgram, type Program } from '../scripts/compiler';
import type { Store } from '../stores/types';
import type { Runtime } from '../kernel/runtime';
import { ClusterStore } from '../stores/cluster';
import type { ResolvedOptions } from './options';
import { BlockCache } from './block-cache';
import { CallPlanner, type Prepared } from './call-plan';
import { InFlight, type Flight } from './inflight';
import { UnitsInFlight, type CallCost } from './units';

/**
 * One plan of a limiter (the only one when `limits` names none): its rules, its script, and the per-plan
 * state of the checks made under it.
 */
export interface PlanState {
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
  readonly inflight: Flight<CallCost> | undefined;
}

/** A prepared check and the plan it runs under. */
export interface Call extends Prepared {
  plan: PlanState;
}

/**
 * Every plan of a limiter, by name. Each plan's script is built here, once; its block cache and units in
 * flight are its own, as its denials and capacities are. Counts are not: every plan keeps them in the
 * identifier's one key, a field per window, so moving between plans keeps the windows they share.
 */
export function createPlans(opts: ResolvedOptions, keys: KeyScheme, store: Store): Map<string, PlanState> {
  const byName = new Map<string, PlanState>();
  for (const plan of opts.plans) byName.set(plan.name, createPlan(opts, keys, store, plan.name, plan.rules));
  return byName;
}

/** One plan: its script built now, its block cache and units in flight its own (also an override's rule set). */
export function createPlan(opts: ResolvedOptions, keys: KeyScheme, store: Store, name: string, rules: readonly Rule[]): PlanState {
  // Incarnations for the scripts that answer receipts: a refundable limiter's, and a Cluster's split checks.
  const planner = new CallPlanner(opts, keys, rules, opts.refunds || store instanceof ClusterStore);
  return {
    name,
    rules,
    planner,
    program: createProgram(opts.algorithm, rules, opts.refunds, opts.lockout),
    cache:
      store.remote && opts.blockCacheMax > 0
        ? new BlockCache(opts.prefix, opts.name, opts.blockCacheMax, opts.clock ?? opts.runtime.now, opts.lockout !== undefined)
        : undefined,
    inflight: store.remote ? flightOf(planner, opts.runtime) : undefined,
  };
}

/** Units in flight for a plan: one count when its rules count one unit, else one per unit. */
function flightOf(planner: CallPlanner, runtime: Runtime): Flight<CallCost> {
  if (planner.units.length === 1) return new InFlight((id) => planner.capacity(id), runtime);
  return new UnitsInFlight(planner.units, (id, unit) => planner.capacityOf(id, unit), runtime);
}

/** A call's reply as a decision of its plan's rules. */
export function decodeCall(call: Call, reply: Reply, source: 'redis' | 'memory' | 'fallback'): Decision {
  return decodeReply(reply, call.ids, call.ruleLists, call.plan.rules, call.costs?.byUnit ?? call.cost, source);
}

/** A call's cost as the engine's helpers take it: one number, or a cost per unit. */
export const callCost = (call: Prepared): CallCost => call.costs ?? call.cost;

/** A call's cost as the block cache keys it: the number, or the script's cost argument. */
export const cacheCost = (call: Prepared): number | string => call.costs?.arg ?? call.cost;

/** The time the store's scripts are given: the limiter's clock when it has one, else its runtime's wall clock. */
export function nowOf(opts: ResolvedOptions): number {
  return opts.clock ? opts.clock() : opts.runtime.wall();
}
