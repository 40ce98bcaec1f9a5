/*
 * Units in flight per identifier (docs/security.md, "Self-inflicted fail-open").
 *
 * A client that sends thousands of concurrent requests to one process would otherwise have thousands of
 * scripts in flight at once: the ones at the back of that queue run out the deadline and take the failure
 * policy ('open': admitted), so the flood itself would buy admissions. Here a limiter lets no more units of
 * one identifier be in flight than its tightest rule can ever admit at once (its capacity). A check that
 * would go past that waits in this process, sending nothing, until earlier checks of that identifier
 * settle; by then the block cache usually knows the identifier is denied and answers it without Redis.
 * A check still waiting when its deadline comes is denied (that many units were already being decided),
 * unless the store is failing: then it takes the failure policy like the checks it waited on.
 * One check may always be in flight, whatever its cost, so a cost above the capacity still gets Redis's
 * answer. Memory: one entry per identifier with units in flight (and at most as many again, plus 64, whose
 * units all settled), one per waiting check.
 */

import type { Deadline } from '../kernel/deadlines';
import type { Runtime } from '../kernel/runtime';
import { Counts } from '../kernel/counts';
import type { Reply } from '../scripts/reply';
import type { RunContext } from '../stores/types';

/** Units in flight: one count (a plan of one unit: InFlight) or one per unit (units.ts). */
export interface Flight<C> {
  enter(ids: readonly string[], cost: C, budgetMs: number): true | Promise<boolean>;
  leave(ids: readonly string[], cost: C): void;
  busy(ids: readonly string[]): boolean;
}

/** A waiting check, and its deadline's entry (kernel/deadlines.ts). */
interface Waiter extends Deadline {
  readonly ids: readonly string[];
  readonly cost: number;
  resolve(admitted: boolean): void;
  /** The identifier whose queue it waits in. */
  queue: string;
}

export class InFlight {
  /** Units in flight per identifier (a busy one's entry is kept at 0 between its checks: kernel/counts.ts). */
  private readonly units = new Counts();
  /** Per full identifier, its waiters in arrival order (a Set: O(1) removal when one gives up). */
  private readonly queues = new Map<string, Set<Waiter>>();

  constructor(
    private readonly capacityOf: (id: string) => number,
    /** Where waiting checks' deadlines run (kernel/runtime.ts). */
    private readonly runtime: Runtime,
  ) {}

  /**
   * Counts a check's units in: true when done at once; else a promise of true once counted, or false when
   * `budgetMs` passed first (then nothing is counted and the check must not be sent).
   */
  enter(ids: readonly string[], cost: number, budgetMs: number): true | Promise<boolean> {
    const full = this.fullFor(ids, cost);
    if (full === undefined) {
      this.add(ids, cost);
      return true;
    }
    return new Promise<boolean>((resolve) => {
      // Gives up on the next setImmediate after its deadline, like the store's own deadline, and on the same
      // queue (kernel/deadlines.ts): the checks it waits on, due at the same time, settle (and may let it in) first.
      const giveUp = (): void => {
        if (!this.queueOf(waiter.queue).delete(waiter)) return;
        this.dropEmpty(waiter.queue);
        resolve(false);
      };
      const waiter: Waiter = {
        ids,
        cost,
        resolve,
        queue: full,
        at: 0,
        lane: undefined,
        prev: undefined,
        next: undefined,
        expire: () => this.runtime.afterTurn(giveUp),
      };
      this.runtime.deadlines.add(waiter, budgetMs, this.runtime.now());
      this.queueOf(full).add(waiter);
    });
  }

  /** Counts a settled check's units out (whenever Redis answered, or the command failed) and wakes waiters. */
  leave(ids: readonly string[], cost: number): void {
    for (const id of ids) this.units.take(id, cost);
    for (const id of ids) this.wake(id);
  }

  /** Whether any of `ids` has units in flight (other checks of it, when asked before entering or after leaving). */
  busy(ids: readonly string[]): boolean {
    for (const id of ids) if (this.units.get(id) > 0) return true;
    return false;
  }

  /** Identifiers with units in flight (for tests and health). */
  get size(): number {
    return this.units.size;
  }

  /** The first identifier that has no room for `cost` more units, if any. */
  private fullFor(ids: readonly string[], cost: number): string | undefined {
    for (const id of ids) {
      const n = this.units.get(id);
      if (n > 0 && n + cost > this.capacityOf(id)) return id;
    }
    return undefined;
  }

  private add(ids: readonly string[], cost: number): void {
    for (const id of ids) this.units.add(id, cost);
  }

  /** Admits the waiters of `id` in order while they fit; one that waits on another identifier moves there. */
  private wake(id: string): void {
    const queue = this.queues.get(id);
    if (queue === undefined) return;
    for (const waiter of queue) {
      const full = this.fullFor(waiter.ids, waiter.cost);
      if (full === id) break;
      queue.delete(waiter);
      if (full !== undefined) {
        waiter.queue = full;
        this.queueOf(full).add(waiter);
        continue;
      }
      this.runtime.deadlines.remove(waiter);
      this.add(waiter.ids, waiter.cost);
      waiter.resolve(true);
    }
    this.dropEmpty(id);
  }

  private queueOf(id: string): Set<Waiter> {
    let queue = this.queues.get(id);
    if (queue === undefined) {
      queue = new Set();
      this.queues.set(id, queue);
    }
    return queue;
  }

  private dropEmpty(id: string): void {
    if (this.queues.get(id)?.size === 0) this.queues.delete(id);
  }
}

/**
 * One check on its way to a remote store, as the store takes it (its RunContext): for a consuming check, its
 * place among its identifiers' units in flight, left as soon as the store is done with the command (Redis
 * answered, the command failed, or it counted as lost at a silent deadline); whether other checks of its
 * identifiers were in flight beside it (a flood, whose admissions by Redis `failure: 'open'` counts too:
 * engine/open-account.ts); and a reply that came after the deadline, handed to `onLate` (what it teaches the
 * block cache). One object and its one callback per check: what the context and the closure of a check were.
 */
export class Passage<C, S> implements RunContext {
  now = 0;
  budgetMs = 0;
  /** When it leaves for the store, on the runtime's clock: its budget counts from there. */
  at = 0;
  readonly settled: (reply: Reply | undefined, late: boolean) => void;
  /** Whether it holds its place among the units in flight (entered, not left yet). */
  private held = false;
  /** Other checks of its identifiers were in flight when it entered or when it left. */
  private crowded: boolean;

  constructor(
    /** The units in flight it takes a place among (a consuming check); undefined for a check that takes none. */
    private readonly flight: Flight<C> | undefined,
    private readonly ids: readonly string[],
    private readonly cost: C,
    /** Whether floods are watched (`failure: 'open'`); `flood` is false without. */
    private readonly watch: boolean,
    private readonly subject: S,
    private readonly onLate: (subject: S, reply: Reply) => void,
  ) {
    this.crowded = watch && flight !== undefined && flight.busy(ids);
    this.settled = (reply, late) => {
      this.leave();
      if (late && reply !== undefined) this.onLate(this.subject, reply);
    };
  }

  /** Whether it takes a place among the units in flight. */
  get counted(): boolean {
    return this.flight !== undefined;
  }

  /** Takes its place: true at once, or a promise of whether it got one within `budgetMs` (nothing held if not). */
  enter(budgetMs: number): true | Promise<boolean> {
    const entered = this.flight!.enter(this.ids, this.cost, budgetMs);
    if (entered === true) return (this.held = true);
    return entered.then((ok) => (this.held = ok));
  }

  /** Leaves its place (once; a no-op when it holds none), noting whether others of its identifiers are still in flight. */
  leave(): void {
    if (!this.held) return;
    this.held = false;
    this.flight!.leave(this.ids, this.cost);
    if (this.watch && !this.crowded) this.crowded = this.flight!.busy(this.ids);
  }

  /**
   * Whether other checks of its identifiers were in flight beside it: when it entered, when it left or now
   * (their replies may have come in the same read as its own and left before it resumed).
   */
  get flood(): boolean {
    return this.watch && (this.crowded || (this.flight !== undefined && this.flight.busy(this.ids)));
  }
}
