import type { Decision } from '../kernel/decision';
import { ArgumentError, describeValue } from '../kernel/errors';
import type { Reply } from '../scripts/reply';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import { evictEverywhere } from './block-cache';
import type { Events } from './events';
import { storeCall } from './admin';
import { callCost, nowOf, type Call, type PlanState } from './plan';
import type { CallCost } from './units';
import { giveCostArg, giveCostFromCheck } from '../scripts/units';
import { settleArgs } from '../scripts/settle';
import { newIncarnation } from '../scripts/incarnation';

/** What a refundable check consumed: per state key, the receipt its script answered. */
interface Consumed {
  ids: string[];
  keys: string[];
  receipts: string[];
  /** Per state key, its identifier's mask (which rules apply), for a settle's charge. */
  masks: string[];
  /** The cost as one number (events). */
  cost: number;
  /** The cost as the check had it: one number, or a cost per unit. */
  estimate: CallCost;
  plan: PlanState;
}

/** A limiter's refunds (the `refunds` option): the receipts of its admitted checks, and refund() over them. */
export class Refunds {
  /** What each refundable decision consumed, until it is refunded (or collected with the decision). */
  private readonly receipts = new WeakMap<Decision, Consumed>();

  constructor(
    private readonly opts: ResolvedOptions,
    private readonly store: Store,
    private readonly events: Events,
  ) {}

  /** A refundable program's admitted, consuming check: what it consumed where, for refund(). */
  keep(call: Call, reply: Reply, decision: Decision): Decision {
    if (!call.plan.program.refundable || !decision.allowed || Number(reply[2]) !== 1) return decision;
    const n = call.ids.length;
    const consumed: Consumed = {
      ids: call.ids,
      keys: [],
      receipts: [],
      masks: [],
      cost: call.cost,
      estimate: callCost(call),
      plan: call.plan,
    };
    for (let i = 0; i < n; i++) {
      const receipt = String(reply[reply.length - n + i]);
      if (receipt === '') continue;
      consumed.keys.push(call.keys[2 * i]!);
      consumed.receipts.push(receipt);
      consumed.masks.push(call.plan.planner.maskOf(call.ids[i]!));
    }
    if (consumed.keys.length > 0) this.receipts.set(decision, consumed);
    return decision;
  }

  /** What `decision` consumed, forgotten: at most once, so a second refund or settle (or one racing it) gets nothing. */
  private take(decision: Decision, what: string): Consumed | undefined {
    if (typeof decision !== 'object' || decision === null) {
      throw new ArgumentError(`${what} takes a decision this limiter's check() returned; got ${describeValue(decision)}`);
    }
    const consumed = this.receipts.get(decision);
    if (consumed !== undefined) this.receipts.delete(decision);
    return consumed;
  }

  /** Gives back what `decision` consumed, at most once (Limiter.refund, Reservation.cancel). */
  async refund(decision: Decision): Promise<boolean> {
    const consumed = this.take(decision, 'refund()');
    if (consumed === undefined) return false;
    // A denial cached since this check may no longer hold once its units are back.
    const { opts } = this;
    evictEverywhere(opts.prefix, opts.name, consumed.ids);
    const { keys, receipts, cost, estimate } = consumed;
    const give = typeof estimate === 'number' ? estimate : giveCostFromCheck(estimate.arg, consumed.plan.planner.units);
    await storeCall(() => this.store.refund(opts.algorithm, keys, receipts, give, { now: nowOf(opts), budgetMs: opts.timeoutMs }));
    if (this.events.active) this.events.refund(consumed.ids, cost);
    return true;
  }

  /**
   * Settles a reservation at its actual cost (Reservation.settle), at most once, in one store call: per unit,
   * what the actual cost left of the estimate is given back (as a refund gives back: only what the windows
   * or buckets still hold), and what it went past it is charged with no admission test. False when there is
   * nothing to settle (see refund()).
   */
  async settle(decision: Decision, actual: CallCost): Promise<boolean> {
    const consumed = this.take(decision, 'settle()');
    if (consumed === undefined) return false;
    const { opts } = this;
    const { plan, estimate } = consumed;
    const units = plan.planner.units;
    const est = typeof estimate === 'number' ? units.map(() => estimate) : estimate.list;
    const act = typeof actual === 'number' ? units.map(() => actual) : actual.list;
    const give = units.map((_, k) => Math.max(est[k]! - act[k]!, 0));
    const charge = units.map((_, k) => Math.max(act[k]! - est[k]!, 0));
    // The actual cost is the estimate: what the check counted stands, nothing to send.
    if (give.every((n) => n === 0) && charge.every((n) => n === 0)) return true;
    if (give.some((n) => n > 0)) evictEverywhere(opts.prefix, opts.name, consumed.ids);
    const giveArg = units.length === 1 ? give[0]! : giveCostArg(Object.fromEntries(units.map((u, k) => [u, give[k]!])));
    const argv = settleArgs(
      opts.algorithm,
      plan.rules,
      giveArg,
      units.length === 1 ? charge[0]! : charge.join(':'),
      plan.planner.nowArg(),
      plan.planner.pad,
      newIncarnation(),
      consumed.masks,
      consumed.receipts,
    );
    await storeCall(() => this.store.settle(plan.program, consumed.keys, argv, { now: nowOf(opts), budgetMs: opts.timeoutMs }));
    return true;
  }
}
