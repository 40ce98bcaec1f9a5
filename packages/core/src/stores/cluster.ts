import type { Algorithm } from '../scripts/types';
import type { Program } from '../scripts/compiler';
import { MASKS_AT } from '../scripts/frame';
import { costTotal, giveCostFromCheck } from '../scripts/units';
import { mergeSlotReplies, parseSlotReply, type Reply, type SlotReply } from '../scripts/reply';
import { StoreError } from '../kernel/errors';
import { RedisStore } from './redis';
import { keySlot } from '../scripts/keys';
import type { RunContext } from './types';

/*
 * The store for a Redis Cluster client (any library the client seam knows: stores/clients/). A check's keys are grouped by hash slot (not by identifier: two
 * identifiers may share a slot) and each slot gets one script call, all in parallel, so no call ever spans
 * slots (no CROSSSLOT). A check whose keys share one slot runs the single-Redis script as is.
 *
 * A split check must decide and leave behind exactly what one Redis would (docs/design.md, invariants 2 and
 * 7). Each slot runs the split frame (scripts/frame.ts, scripts/compiler/frames.ts): it consumes when its own part of
 * the check would, and answers with every outcome the whole check can have. Then:
 *   - the whole check consumes as one Redis would: when it is a check of cost > 0, nothing blocks in any
 *     slot, and every pair admits the cost (or, with penalty, whatever they say). Then every slot has
 *     consumed, and the reply reports the pairs after the commit at cost 0 (admitted) or at the cost
 *     (a denial that penalty consumed).
 *   - otherwise (a denial without penalty, a block anywhere, a peek or cost 0) the reply reports the pairs
 *     before any commit, and every slot that consumed is given back.
 *   - a slot that fails (an error reply, a lost connection) or a check its caller stopped waiting for
 *     (the deadline RedisStore.run keeps) fails as a whole: it takes the failure policy, and every slot
 *     that consumed is given back, including a slot whose reply arrives after the deadline.
 * A give-back restores the key's snapshot (its exact bytes and expiry before the check) while the key is
 * still what the check left (sha1 digest of its DUMP); when a concurrent check has written the key
 * since, it runs the algorithm's undo receipt instead, which gives back only what still applies (never
 * over-admits). So checks one after another leave exactly one Redis's bytes; between a slot's consume and
 * its give-back (one round trip), a concurrent check may be denied that would have fitted.
 *
 * The give-back writes nothing else: no marker key. It is therefore not idempotent, and Floodgate sends
 * each one exactly once, never retrying it. Like the check itself, it relies on the client not re-sending
 * commands left unanswered by a dropped connection (`autoResendUnfulfilledCommands: false`, README
 * "Production"): a re-sent give-back could give back twice.
 */

export { keySlot } from '../scripts/keys';

interface SlotCall {
  /** The caller's identifier indices in this slot, and the slot's KEYS and ARGV. */
  ids: number[];
  keys: string[];
  argv: (string | number)[];
  reply?: SlotReply;
  /** Set when its give-back is sent: each goes out once. */
  givenBack: boolean;
}

export class ClusterStore extends RedisStore {
  /** Split checks between run() and runNow(), by their ARGV (the array run() hands on to runNow()). */
  private readonly splits = new WeakMap<object, SplitCheck>();

  override run(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Promise<Reply> {
    // KEYS: per identifier its state and block key, then (with a lockout) every identifier's lockout key,
    // then every identifier's block index key (in its block key's slot).
    const nIds = keys.length / (program.lockout ? 4 : 2);
    const masks = MASKS_AT;
    const bySlot = new Map<number, SlotCall>();
    for (let i = 0; i < nIds; i++) {
      const slot = keySlot(keys[2 * i]!);
      const call = bySlot.get(slot) ?? { ids: [], keys: [], argv: argv.slice(0, masks), givenBack: false };
      call.ids.push(i);
      call.keys.push(keys[2 * i]!, keys[2 * i + 1]!);
      call.argv.push(argv[masks + i]!);
      bySlot.set(slot, call);
    }
    if (program.lockout) {
      for (const call of bySlot.values()) call.keys.push(...call.ids.map((i) => keys[2 * nIds + i]!));
      for (const call of bySlot.values()) call.keys.push(...call.ids.map((i) => keys[3 * nIds + i]!));
    }
    // After the masks, the check's incarnation (scripts/frame.ts), in every slot; then, with a lockout, whether each
    // of the slot's identifiers is in its scope.
    const incarnation = argv[masks + nIds];
    if (incarnation !== undefined) for (const call of bySlot.values()) call.argv.push(incarnation);
    if (program.lockout) for (const call of bySlot.values()) call.argv.push(...call.ids.map((i) => argv[masks + nIds + 1 + i]!));
    // One slot: the single-Redis script, compiled for the rules; nothing to give back, so no receipts.
    if (bySlot.size === 1) return super.run(program, keys, argv, ctx);
    const check = new SplitCheck(this, program, [...bySlot.values()], argv, masks);
    this.splits.set(argv, check);
    const reply = super.run(program, keys, argv, ctx);
    // Its caller got an error (a slot's, which the check already knows, or the deadline, or it was never
    // sent): the check failed as a whole, and whatever a slot consumed, now or when it answers, is given back.
    reply.catch(() => check.fail());
    return reply;
  }

  /** Sends a split check's slot calls (run() decided it splits); RedisStore's deadline is around it. */
  protected override runNow(program: Program, keys: string[], argv: (string | number)[]): Promise<Reply> {
    const check = this.splits.get(argv);
    if (check === undefined) return super.runNow(program, keys, argv);
    this.splits.delete(argv);
    return check.run();
  }

  /** The split frame over keys of one slot (scripts/frame.ts, scripts/compiler/frames.ts). Public for tests. */
  runSlot(program: Program, keys: string[], argv: (string | number)[]): Promise<Reply> {
    return this.send(`${program.algorithm.tag}_split`, program.split, keys, argv);
  }

  /**
   * A settle's keys, one settle script per slot, in parallel: it has no admission test, so each slot's part
   * stands on its own (as a refund's give-back does); KEYS and the per-identifier ARGV split by slot.
   */
  protected override settleNow(program: Program, keys: string[], argv: (string | number)[]): Promise<unknown> {
    const shared = argv.length - 2 * keys.length;
    const bySlot = new Map<number, number[]>();
    keys.forEach((key, i) => {
      const slot = keySlot(key);
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), i]);
    });
    if (bySlot.size === 1) return super.settleNow(program, keys, argv);
    return Promise.all(
      [...bySlot.values()].map((is) =>
        super.settleNow(
          program,
          is.map((i) => keys[i]!),
          [...argv.slice(0, shared), ...is.flatMap((i) => [argv[shared + 2 * i]!, argv[shared + 2 * i + 1]!])],
        ),
      ),
    );
  }

  /** A refund's keys, one give-back per slot, in parallel. */
  protected override refundNow(algorithm: Algorithm, keys: string[], receipts: string[], cost: number | string): Promise<unknown> {
    const bySlot = new Map<number, number[]>();
    keys.forEach((key, i) => {
      const slot = keySlot(key);
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), i]);
    });
    return Promise.all(
      [...bySlot.values()].map((is) =>
        this.giveBack(
          algorithm,
          is.map((i) => keys[i]!),
          is.map((i) => receipts[i]!),
          cost,
        ),
      ),
    );
  }
}

/** One check split across slots: the slots' calls, the merge, and the give-backs (see the top of the file). */
class SplitCheck {
  private failed = false;
  private readonly undos: Promise<unknown>[] = [];
  /** What the check's cost adds up to (more than 0: it consumes), and its give-back's cost argument (units.ts). */
  private readonly cost: number;
  private readonly giveCost: number | string;

  private readonly algorithm: Algorithm;

  constructor(
    private readonly store: ClusterStore,
    private readonly program: Program,
    private readonly calls: SlotCall[],
    private readonly argv: (string | number)[],
    private readonly masks: number,
  ) {
    this.cost = costTotal(argv[1]!);
    this.giveCost = giveCostFromCheck(argv[1]!, program.units);
    this.algorithm = program.algorithm;
  }

  async run(): Promise<Reply> {
    const settled = await Promise.allSettled(this.calls.map((c) => this.send(c)));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failure || this.failed) {
      this.fail();
      await Promise.all(this.undos);
      throw failure ? failure.reason : new StoreError('timeout', 'the check was abandoned at its deadline');
    }
    let merged: { reply: Reply; consumed: boolean };
    try {
      merged = mergeSlotReplies(
        this.calls.map((c) => ({ ids: c.ids, reply: c.reply! })),
        String(this.argv[0]),
        this.cost,
        this.argv[2] === '1',
      );
    } catch (err) {
      this.fail();
      await Promise.all(this.undos);
      throw err;
    }
    if (!merged.consumed) for (const c of this.calls) this.giveBack(c);
    await Promise.all(this.undos);
    // A refundable program answers, after a consuming check, each identifier's receipt, as one Redis would.
    if (merged.consumed && this.program.refundable) {
      const receipts: string[] = [];
      for (const c of this.calls) c.ids.forEach((i, k) => (receipts[i] = c.reply!.undo[k]!.digest === '' ? '' : c.reply!.undo[k]!.receipt));
      merged.reply.push(...receipts);
    }
    return merged.reply;
  }

  /** The check failed: every slot that consumed is given back, now or as soon as it answers. */
  fail(): void {
    this.failed = true;
    for (const c of this.calls) this.giveBack(c);
  }

  private async send(c: SlotCall): Promise<void> {
    try {
      c.reply = parseSlotReply(
        await this.store.runSlot(this.program, c.keys, c.argv),
        c.ids.map((i) => String(this.argv[this.masks + i])),
      );
    } catch (err) {
      this.fail();
      throw err;
    }
    if (this.failed) this.giveBack(c);
  }

  /** Sent once per slot, only for a slot that consumed; a failed give-back only under-admits, so it is not the caller's error. */
  private giveBack(c: SlotCall): void {
    if (c.givenBack || !c.reply?.consumed) return;
    c.givenBack = true;
    // An identifier no rule applies to wrote nothing (digest ''): nothing to give back.
    const written = c.reply.undo.flatMap((u, k) => (u.digest === '' ? [] : [k]));
    if (written.length === 0) return;
    const stateKeys = written.map((k) => c.keys[2 * k]!);
    const receipts = written.map((k) => c.reply!.undo[k]!);
    this.undos.push(this.store.giveBack(this.algorithm, stateKeys, receipts, this.giveCost).catch(() => undefined));
  }
}
