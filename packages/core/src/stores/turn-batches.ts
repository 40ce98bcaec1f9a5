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

/** Per store: the open batch of each kind (and, on a Cluster, of each hash slot). */
export class TurnBatches<Kind, Item> {
  private readonly open = new Map<Kind, Map<number, Batch<Item>>>();
  private scheduled = false;

  /** `dispatch` sends a batch (when it leaves: its Flush's `at` is set first, on `runtime`'s clock). */
  constructor(
    private readonly runtime: Runtime,
    private readonly dispatch: (kind: Kind, batch: OutgoingBatch<Item>) => void,
  ) {}

  /**
   * Queues an item of `kind` in `slot` (-1 off a Cluster); returns the Flush of the write it will leave in
   * (its `at` set once it has left).
   */
  add(kind: Kind, slot: number, item: Item, deadlineAt: number): Flush {
    let batches = this.open.get(kind);
    if (batches === undefined) {
      batches = new Map();
      this.open.set(kind, batches);
    }
    let batch = batches.get(slot);
    if (batch === undefined) {
      batch = new Batch<Item>();
      batches.set(slot, batch);
      if (!this.scheduled) {
        this.scheduled = true;
        this.runtime.afterTurn(() => this.endOfTurn());
      }
    }
    if (deadlineAt < batch.deadlineAt) batch.deadlineAt = deadlineAt;
    batch.items.push(item);
    if (batch.items.length >= BATCH_MAX) {
      batches.delete(slot);
      this.send(kind, batch);
    }
    return batch.flush;
  }

  private endOfTurn(): void {
    this.scheduled = false;
    const open = [...this.open.entries()];
    this.open.clear();
    for (const [kind, batches] of open) for (const batch of batches.values()) this.send(kind, batch);
  }

  private send(kind: Kind, batch: Batch<Item>): void {
    if (batch.sent) return;
    batch.sent = true;
    batch.flush.at = this.runtime.now();
    this.dispatch(kind, batch);
  }
}
