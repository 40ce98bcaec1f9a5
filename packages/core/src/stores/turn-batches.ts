import type { Runtime } from '../kernel/runtime';
import type { Flush } from './coalesce';

/*
 * The open batches of one store (docs/design.md, section 4, "Batches"), whatever they carry: checks of a
 * program (stores/batch.ts) or calls of another script (stores/script-batch.ts). Items of one kind (a
 * program, a script) and, on a Cluster, of one hash slot share a batch. A batch leaves at the end of the
 * turn (the check phase: one setImmediate sends every batch still open), or as soon as it holds BATCH_MAX
 * items, so Redis starts on the first of a busy turn while this process is still parsing the rest (an
 * idle Redis while the server works, then an idle server while Redis works, is what a whole-turn batch
 * would cost).
 *
 * Except when the store is idle: an item that finds no batch call of this store in flight, and no batch of
 * its kind and slot open in this turn, leaves at once, alone. Held to the end of the turn, it would wait while
 * this process parses every other request of the turn, with Redis idle; sent now, its round trip overlaps
 * that parsing, and the turn's later items still share a batch (at a quarter of Fastify's capacity, about
 * 100 µs of the median's 365: bench/results/ab/idle-send.md).
 * Under load a call is nearly always in flight, and the turn's batches form as before.
 *
 * Unless a caller asks for whole batches in this turn (keepWhole(): an adapter whose one request carries many
 * checks, a tRPC batch): then the turn's batches leave at its end, or as soon as they hold WHOLE_MAX items,
 * so a request of many checks is one call, and a request of very many cannot make one script call that holds
 * Redis up for long (a script runs alone). The ask lasts until the end of the turn, when every open batch
 * leaves anyway; the next turn splits at BATCH_MAX again unless asked again.
 */

/**
 * The most items one batch call carries: small enough that Redis starts early on a busy turn (in `npm run
 * bench`, Fastify `equal`: 8 and 16 ahead of 4, 32 and 64, measured before a check's ARGV became one
 * argument). FLOODGATE_BATCH_MAX sets it for the process, for an A/B (1 turns batching off); anything but an
 * integer from 1 to 1,000 leaves the default.
 */
export const BATCH_MAX = batchMax(process.env.FLOODGATE_BATCH_MAX);

function batchMax(env: string | undefined): number {
  const n = Number(env);
  return env !== undefined && Number.isInteger(n) && n >= 1 && n <= 1_000 ? n : 16;
}

/**
 * The most items one batch call carries in a turn asked to keep its batches whole (keepWhole()): the upper
 * bound FLOODGATE_BATCH_MAX accepts, so one script call never runs more checks than it could be set to.
 */
export const WHOLE_MAX = 1_000;

/** A batch as it leaves: its items in arrival order, and the earliest deadline among them. */
export interface OutgoingBatch<Item> {
  readonly items: Item[];
  readonly deadlineAt: number;
}

class Batch<Item> implements OutgoingBatch<Item> {
  readonly items: Item[] = [];
  readonly flush: Flush = { at: undefined };
  deadlineAt = Infinity;
  sent = false;
}

/** Where one kind's batches of one slot open: made once and kept, its batch replaced turn by turn. */
interface Lane<Kind, Item> {
  readonly kind: Kind;
  open: Batch<Item> | undefined;
}

/*
 * Memory: nothing here is allocated per turn but the turn's batches. The open batches used to live in a
 * Map cleared at the end of every turn, and a cleared (or rehashed) Map keeps its old table as a pointer to
 * the new one, for iterators that might still walk it. Once one of those tables had outlived a young
 * generation collection, V8 kept every later table, and every turn's batches with their checks' keys,
 * arguments and promises, through each young collection that followed, until a full collection: in a
 * server that ran about 1.2 KB per check into the old generation, young collections of 3-4 ms instead of
 * under 1, and a full one every few seconds (the latency phase of `npm run bench` showed it at the tail).
 * The lanes are kept per kind (a WeakMap: a kind that goes, a closed limiter's program, takes its lanes)
 * and per slot (one off a Cluster, at most one per hash slot on one), and the lanes opened this turn are
 * listed in an array that is emptied, never replaced.
 */

/** Per store: the open batch of each kind (and, on a Cluster, of each hash slot). */
export class TurnBatches<Kind extends object, Item> {
  private readonly lanes = new WeakMap<Kind, Map<number, Lane<Kind, Item>>>();
  /** The lanes a batch opened in this turn (a lane whose batch left full and opened again is listed twice). */
  private readonly opened: Lane<Kind, Item>[] = [];
  private scheduled = false;
  /** The most items a batch of this turn holds before it leaves: BATCH_MAX, or WHOLE_MAX once keepWhole() asked. */
  private max = BATCH_MAX;

  /** `dispatch` sends a batch (when it leaves: its Flush's `at` is set first, on `runtime`'s clock). */
  constructor(
    private readonly runtime: Runtime,
    private readonly dispatch: (kind: Kind, batch: OutgoingBatch<Item>) => PromiseLike<unknown>,
  ) {}

  /** Batch calls sent and not yet answered (or failed): while there are none, an item leaves at once. */
  private inFlight = 0;
  private readonly landed = (): void => {
    this.inFlight--;
  };

  /**
   * Queues an item of `kind` in `slot` (-1 off a Cluster); returns the Flush of the write it will leave in
   * (its `at` set once it has left).
   */
  add(kind: Kind, slot: number, item: Item, deadlineAt: number): Flush {
    let bySlot = this.lanes.get(kind);
    if (bySlot === undefined) {
      bySlot = new Map();
      this.lanes.set(kind, bySlot);
    }
    let lane = bySlot.get(slot);
    if (lane === undefined) {
      lane = { kind, open: undefined };
      bySlot.set(slot, lane);
    }
    let batch = lane.open;
    if (batch === undefined && this.inFlight === 0 && this.max !== WHOLE_MAX) {
      // Idle: nothing to wait for, so nothing to gain by waiting for the end of the turn.
      const alone = new Batch<Item>();
      alone.deadlineAt = deadlineAt;
      alone.items.push(item);
      this.send(kind, alone);
      return alone.flush;
    }
    if (batch === undefined) {
      batch = new Batch<Item>();
      lane.open = batch;
      this.opened.push(lane);
      this.schedule();
    }
    if (deadlineAt < batch.deadlineAt) batch.deadlineAt = deadlineAt;
    batch.items.push(item);
    if (batch.items.length >= this.max) {
      lane.open = undefined;
      this.send(kind, batch);
    }
    return batch.flush;
  }

  /**
   * Keeps this turn's batches whole: they leave at the end of the turn, or once they hold WHOLE_MAX items
   * (a batch already open grows on; one that left full is gone). Until the end of the turn.
   */
  keepWhole(): void {
    if (this.max === WHOLE_MAX) return;
    this.max = WHOLE_MAX;
    // Cleared at the end of the turn, which comes even when no batch opens in this one.
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.runtime.afterTurn(() => this.endOfTurn());
  }

  private endOfTurn(): void {
    this.scheduled = false;
    this.max = BATCH_MAX;
    const n = this.opened.length;
    for (let i = 0; i < n; i++) {
      const lane = this.opened[i]!;
      const batch = lane.open;
      if (batch === undefined) continue;
      lane.open = undefined;
      this.send(lane.kind, batch);
    }
    // What a dispatch queued meanwhile (none does today) stays listed for the turn it scheduled.
    this.opened.splice(0, n);
  }

  private send(kind: Kind, batch: Batch<Item>): void {
    if (batch.sent) return;
    batch.sent = true;
    batch.flush.at = this.runtime.now();
    this.inFlight++;
    this.dispatch(kind, batch).then(this.landed, this.landed);
  }
}
