import type { Decision } from '../kernel/decision';
import { ArgumentError, describeValue } from '../kernel/errors';
import type { Reply } from '../scripts/reply';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import { evictEverywhere } from './block-cache';
import type { Events } from './events';
import { storeCall } from './admin';
import { nowOf, type Call } from './plan';

/** What a refundable check consumed: per state key, the receipt its script answered. */
interface Consumed {
  ids: string[];
  keys: string[];
  receipts: string[];
  cost: number;
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

  /** Gives back what `decision` consumed, at most once (Limiter.refund). */
  async refund(decision: Decision): Promise<boolean> {
    if (typeof decision !== 'object' || decision === null) {
      throw new ArgumentError(`refund() takes a decision this limiter's check() returned; got ${describeValue(decision)}`);
    }
    const consumed = this.receipts.get(decision);
    if (consumed === undefined) return false;
    // At most once: forgotten before it is sent, so a second refund (or one racing this) gives nothing.
    this.receipts.delete(decision);
    // A denial cached since this check may no longer hold once its units are back.
    const { opts } = this;
    evictEverywhere(opts.prefix, opts.name, consumed.ids);
    const { keys, receipts, cost } = consumed;
    await storeCall(() => this.store.refund(opts.algorithm, keys, receipts, cost, { now: nowOf(opts), budgetMs: opts.timeoutMs }));
    if (this.events.active) this.events.refund(consumed.ids, cost);
    return true;
  }
}
