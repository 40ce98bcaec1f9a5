import { DeadlineQueue } from './deadlines';
import type { TimerHandle } from './real-timers';
import type { Runtime } from './runtime';

/*
 * A runtime whose time moves only when a test moves it (kernel/runtime.ts): Floodgate's own tests of how a
 * limiter reacts to its store (deadlines, the breaker, the failure policies, units in flight) run on it, in
 * milliseconds of real time and the same way on a loaded machine as on an idle one.
 *
 * Its timers fire in the order a real event loop fires them: advance() takes time to each timer due in
 * turn; at each instant it fires every timer due then (oldest first), letting the promises each sets off run
 * before the next, as Node runs microtasks between timer callbacks; then the end-of-turn callbacks
 * (afterTurn, the check phase), which therefore see every reply that fell due at the same instant; then a
 * timer set meanwhile for that instant, as the event loop's next iteration would. Outside advance(), an
 * end-of-turn callback runs at the real end of the turn, and time stands still.
 */

/** The real setImmediate, as this module found it: a test's fake timers installed later do not touch it. */
const immediate = globalThis.setImmediate;
/** The microtasks queued so far run first, then this resolves (a real turn of the event loop). */
const turn = (): Promise<void> => new Promise((resolve) => void immediate(resolve));

interface Timer {
  readonly at: number;
  readonly seq: number;
  fn: (() => void) | undefined;
  /** Holds the process alive (counted in `pending`): not unref'd. */
  refed: boolean;
}

export interface VirtualRuntime extends Runtime {
  /** Virtual ms since the runtime was made (0 at first). */
  readonly now: () => number;
  /** Moves time forward by `ms`, firing every timer due on the way (see above); resolves once all is quiet. */
  advance(ms: number): Promise<void>;
  /** Runs what is due without moving time: promises, end-of-turn callbacks, timers due now. */
  settle(): Promise<void>;
  /**
   * Moves time to each next timer until `promise` settles, and resolves as it does. Rejects when nothing
   * is left that could settle it (no timer pending), or when it has not settled within `limitMs`.
   */
  until<T>(promise: Promise<T>, limitMs?: number): Promise<T>;
  /** A timer whose hold on the process can change (kernel/deadlines.ts's Timers); `timeout` is one's cancel. */
  readonly timer: (fn: () => void, ms: number) => TimerHandle;
  /** Timers armed and not yet fired or cancelled that would hold a process alive (not unref'd: an idle deadline lane's is). */
  readonly pending: number;
}

/** A virtual runtime starting at 0 ms; its wall clock reads `wallStart` (ms since the epoch) then. */
export function virtualRuntime(wallStart = Date.UTC(2030, 0, 1)): VirtualRuntime {
  let time = 0;
  let seq = 0;
  let timers: Timer[] = [];
  let live = 0;
  let ends: (() => void)[] = [];
  let armed = false;
  let advancing = false;

  const runEnds = (): boolean => {
    if (ends.length === 0) return false;
    const due = ends;
    ends = [];
    for (const fn of due) fn();
    return true;
  };

  const afterTurn = (fn: () => void): void => {
    ends.push(fn);
    if (armed || advancing) return;
    armed = true;
    immediate(() => {
      armed = false;
      if (!advancing) runEnds();
    });
  };

  const timer = (fn: () => void, ms: number): TimerHandle => {
    const t: Timer = { at: time + Math.max(ms, 0), seq: seq++, fn, refed: true };
    // Kept sorted by (at, seq): a test arms few timers, and deadlines share one per duration.
    let i = timers.length;
    while (i > 0 && (timers[i - 1]!.at > t.at || (timers[i - 1]!.at === t.at && timers[i - 1]!.seq > t.seq))) i--;
    timers.splice(i, 0, t);
    live++;
    return {
      cancel: () => {
        if (t.fn === undefined) return;
        t.fn = undefined;
        if (t.refed) live--;
      },
      ref: (on) => {
        if (t.fn === undefined || t.refed === on) return;
        t.refed = on;
        live += on ? 1 : -1;
      },
    };
  };

  const timeout = (fn: () => void, ms: number): (() => void) => timer(fn, ms).cancel;

  /** Promises and end-of-turn callbacks, until neither has anything left. */
  const quiet = async (): Promise<void> => {
    do await turn();
    while (runEnds());
  };

  /** Fires the timers due at `time` that were armed before this call, each followed by its promises. */
  const fireDue = async (): Promise<boolean> => {
    const last = seq;
    let fired = false;
    while (timers.length > 0 && timers[0]!.at <= time && timers[0]!.seq < last) {
      const timer = timers.shift()!;
      const fn = timer.fn;
      if (fn === undefined) continue;
      timer.fn = undefined;
      if (timer.refed) live--;
      fired = true;
      fn();
      await turn();
    }
    return fired;
  };

  const to = async (target: number): Promise<void> => {
    advancing = true;
    try {
      await quiet();
      for (;;) {
        timers = timers.filter((t) => t.fn !== undefined);
        const next = timers[0];
        if (next === undefined || next.at > target) break;
        time = Math.max(time, next.at);
        await fireDue();
        await quiet();
      }
      time = Math.max(time, target);
    } finally {
      advancing = false;
    }
    await quiet();
  };

  return {
    now: () => time,
    wall: () => wallStart + time,
    afterTurn,
    timeout,
    timer,
    deadlines: new DeadlineQueue({ now: () => time, timer }),
    advance: (ms) => to(time + Math.max(ms, 0)),
    settle: () => to(time),
    get pending() {
      return live;
    },
    async until<T>(promise: Promise<T>, limitMs = 3_600_000): Promise<T> {
      let done = false;
      const watched = promise.finally(() => {
        done = true;
      });
      watched.catch(() => undefined);
      const limit = time + limitMs;
      await to(time);
      while (!done) {
        const next = timers.find((t) => t.fn !== undefined);
        if (next === undefined) throw new Error(`virtual runtime: nothing left to settle the promise (at ${time} ms)`);
        if (next.at > limit) throw new Error(`virtual runtime: the promise did not settle within ${limitMs} ms (at ${time} ms)`);
        await to(next.at);
      }
      return watched;
    },
  };
}
