import type { Decision } from '../kernel/decision';
import type { Rule } from '../config/rules';
import { decodeReply, type Reply } from '../scripts/reply';
import type { KeyScheme } from '../scripts/keys';
import { createProgram, type Program } from '../scripts/compiler';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import { BlockCache } from './block-cache';
import { CallPlanner, type Prepared } from './call-plan';
import { InFlight } from './inflight';

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
  readonly inflight: InFlight | undefined;
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
  for (const plan of opts.plans) {
    const planner = new CallPlanner(opts, keys, plan.rules);
    byName.set(plan.name, {
      name: plan.name,
      rules: plan.rules,
      planner,
      program: createProgram(opts.algorithm, plan.rules, opts.refunds, opts.lockout),
      cache:
        store.remote && opts.blockCacheMax > 0
          ? new BlockCache(opts.prefix, opts.name, opts.blockCacheMax, opts.clock ?? (() => performance.now()), opts.lockout !== undefined)
          : undefined,
      inflight: store.remote ? new InFlight((id) => planner.capacity(id)) : undefined,
    });
  }
  return byName;
}

/** A call's reply as a decision of its plan's rules. */
export function decodeCall(call: Call, reply: Reply, source: 'redis' | 'memory' | 'fallback'): Decision {
  return decodeReply(reply, call.ids, call.ruleLists, call.plan.rules, call.cost, source);
}

/** The time the store's scripts are given: the limiter's clock when it has one, else the wall clock. */
export function nowOf(opts: ResolvedOptions): number {
  return opts.clock ? opts.clock() : Date.now();
}
