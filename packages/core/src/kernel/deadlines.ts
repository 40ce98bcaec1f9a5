import { realNow, realTimer, type TimerHandle } from './real-timers';

/*
 * Real-time deadlines on one timer per duration, not one timer each: the deadlines of the commands in flight
 * (stores/guarded-call.ts) and of the checks waiting for room among units in flight (engine/inflight.ts). A busy
 * server starts tens of thousands of checks a second, and a timer each (a Timeout object, a clock reading
 * in C++, a list insertion, then a clearTimeout when the reply comes) was a measurable share of a check's
 * own cost. Node's timers group by duration the same way; this skips their per-timer objects.
 *
 * Commands of one budget are queued in the order they start, so each lane is sorted by deadline: its one
 * timer is armed for its first entry, and when it fires it expires every entry that is due and arms again
 * for the next. An entry is taken out in O(1) when its command settles (a doubly linked list through the
 * entries themselves, no allocation per command).
 *
 * A lane its last entry leaves stays, idle, with its timer armed but unref'd (it keeps no process alive) until
 * that timer fires and finds it empty: a server whose checks arrive one at a time (each command settles before
 * the next starts) would otherwise arm a timer, clear it and make the lane again for every command, which
 * was a measurable share of a lone check's cost (bench/results/ab/deadline-idle.md). Only a few lanes idle at
 * once (MAX_IDLE): past that, an emptied lane goes with its timer, so budgets that vary call to call (what is
 * left after a wait) cannot pile up timers.
 *
 * On the timers it is given: a runtime's (kernel/runtime.ts), real time even under a test's fake timers by
 * default (kernel/real-timers.ts).
 *
 * One queue per runtime (the real one's is the whole process's), so that deadlines of one length set in one
 * order expire in that order: a check waiting for room behind checks due at the same time gives up only
 * after they have settled (and may have let it in), which a timer of its own, set after the lane's, did not
 * promise.
 */

/** The clock and timers a queue runs on (a Runtime's: kernel/runtime.ts). */
export interface Timers {
  /** Monotonic time in ms. */
  readonly now: () => number;
  /** Runs fn once, ms from now, holding the process alive (ref'd) until its handle says otherwise. */
  readonly timer: (fn: () => void, ms: number) => TimerHandle;
}

/** A command's place in its lane; `expire` runs once when its deadline passes while still queued. */
export interface Deadline {
  /** When it falls due (its queue's clock). */
  at: number;
  /** The lane it is queued in, undefined once it is out (expired or cancelled). */
  lane: Lane | undefined;
  prev: Deadline | undefined;
  next: Deadline | undefined;
  expire(): void;
}

/** The commands of one budget (ms), in deadline order, with the timer armed for the first. */
interface Lane {
  readonly ms: number;
  head: Deadline | undefined;
  tail: Deadline | undefined;
  /** The timer armed for the head's time or earlier (it re-arms when it finds nothing due); undefined when none is. */
  timer: TimerHandle | undefined;
  /** While its timer's callback runs: entries it takes out leave the lane to it. */
  firing: boolean;
}

/**
 * A timer fires on the event loop's clock, read once per loop iteration, so it can fire up to that
 * much before realNow() reaches the deadline: an entry this close counts as due, as it would for setTimeout.
 */
const EARLY_MS = 1;

/** How many empty lanes may keep their timer (unref'd) for the next command of their budget. */
const MAX_IDLE = 8;

export class DeadlineQueue {
  private readonly lanes = new Map<number, Lane>();
  /** Lanes with no entry whose timer is still armed. */
  private idle = 0;

  constructor(private readonly timers: Timers = { now: realNow, timer: realTimer }) {}

  /**
   * Queues `entry` to expire `ms` after `now` (the queue's clock, read by the caller, who often needs it too). Its
   * `expire` runs from a timer callback, never from inside this call.
   */
  add(entry: Deadline, ms: number, now: number): void {
    const key = Math.max(Math.ceil(ms), 0);
    entry.lane = undefined;
    if (!Number.isFinite(key)) return; // no deadline: it never expires
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { ms: key, head: undefined, tail: undefined, timer: undefined, firing: false };
      this.lanes.set(key, lane);
    } else if (lane.head === undefined && lane.timer !== undefined && !lane.firing) {
      this.idle--; // idle no more: its timer holds the process again
      lane.timer.ref(true);
    }
    entry.at = now + key;
    entry.lane = lane;
    entry.next = undefined;
    entry.prev = lane.tail;
    if (lane.tail === undefined) lane.head = entry;
    else lane.tail.next = entry;
    lane.tail = entry;
    if (lane.timer === undefined) this.arm(lane, key);
  }

  /**
   * Takes `entry` out of its lane (a no-op when it is out already). A lane it leaves empty idles with its
   * timer unref'd, or is dropped with it when enough lanes idle already: nothing keeps the process alive after
   * the last command has settled, and an idle lane is gone when its timer fires.
   */
  remove(entry: Deadline): void {
    const lane = entry.lane;
    if (lane === undefined) return;
    entry.lane = undefined;
    if (entry.prev === undefined) lane.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) lane.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
    if (lane.head !== undefined || lane.firing) return;
    if (this.idle >= MAX_IDLE) {
      this.drop(lane);
      return;
    }
    this.idle++;
    lane.timer!.ref(false);
  }

  private arm(lane: Lane, ms: number): void {
    lane.timer = this.timers.timer(() => this.fire(lane), ms);
  }

  /** An empty lane goes with its timer; a later add makes it again. */
  private drop(lane: Lane): void {
    lane.timer?.cancel();
    lane.timer = undefined;
    if (this.lanes.get(lane.ms) === lane) this.lanes.delete(lane.ms);
  }

  private fire(lane: Lane): void {
    const now = this.timers.now();
    if (lane.head === undefined) {
      // Idle since its last entry left: nothing came for this budget before the timer did.
      this.idle--;
      lane.timer = undefined;
      this.drop(lane);
      return;
    }
    // Still armed while expiring: an entry added meanwhile (by what an expiry set off) is armed for below.
    lane.firing = true;
    for (let e = lane.head; e !== undefined && e.at <= now + EARLY_MS; e = lane.head) {
      this.remove(e);
      e.expire();
    }
    lane.firing = false;
    lane.timer = undefined;
    const head = lane.head;
    if (head !== undefined) this.arm(lane, Math.max(Math.ceil(head.at - now), 1));
    else this.drop(lane);
  }
}
