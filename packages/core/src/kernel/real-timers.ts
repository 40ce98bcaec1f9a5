/*
 * The event loop's timers for Floodgate's own deadlines and write coalescing, whatever fake clock an
 * application's test suite installs (docs/design.md, "Fake timers").
 *
 * Jest's default modern timers, @sinonjs/fake-timers and node:test's mock.timers replace setImmediate and
 * setTimeout (on globalThis, and sinon and node:test on node:timers too), so capturing them at import is no
 * help when the fakes came first. A check scheduled on them would never settle until the test advanced
 * the fake clock, and the socket corked for the turn (stores/coalesce.ts) would stay corked, hanging the
 * application's own commands on that client. So:
 *
 * - afterTurn(fn) runs fn at the end of this event-loop turn: on the global setImmediate (the check
 *   phase, as before), with a backstop on AbortSignal.timeout, which Node runs on its internal timers
 *   (none of the three fakes it). The backstop runs only what the setImmediate left pending through a
 *   whole loop iteration, which a real setImmediate never does. Once the global setImmediate has run a
 *   callback before the backstop saw it, it is trusted while it stays the global one, and afterTurn is a
 *   plain setImmediate (under a fake it knows, afterTurn goes to the backstop directly).
 * - realTimeout(fn, ms) is a deadline in real time: the global setTimeout while that is the event loop's,
 *   else (a fake it knows: sinon's marker, also Jest's modern timers'; Jest's legacy mocks; node:test's)
 *   AbortSignal.timeout, which cannot be cleared (cancelling drops the callback; the timer is unref'd).
 *   Under a fake it does not know, a deadline follows the fake clock, and a check still settles when Redis
 *   answers.
 * - realTimer(fn, ms) is the same timer as a handle that can unref it while it is armed, and ref it again
 *   (realTimeout is a realTimer's cancel).
 * - realNow() is the real monotonic clock in ms (process.uptime(), which none of them fakes, unlike
 *   performance.now and process.hrtime).
 * A limiter reads them through its runtime (kernel/runtime.ts): these are the real one's.
 */

type Fn = () => void;

interface Pending {
  fn: Fn | undefined;
  /** Seen pending by one backstop run already: the next one runs it. */
  seen: boolean;
}

const pending = new Set<Pending>();
let backstop: AbortSignal | undefined;
/** Deadlines on AbortSignal.timeout, held until they fire or are cancelled (Node drops the timer of a signal nobody references). */
const deadlines = new Set<AbortSignal>();

export function realNow(): number {
  return process.uptime() * 1000;
}

function isFake(fn: unknown): boolean {
  if (typeof fn !== 'function') return true;
  // @sinonjs/fake-timers (also Jest's modern timers) marks what it installs; Jest's legacy timers are mock
  // functions; node:test installs its MockTimers' private methods, bound.
  const marks = fn as { clock?: unknown; _isMockFunction?: unknown };
  return marks.clock !== undefined || marks._isMockFunction === true || fn.name.startsWith('bound #');
}

function run(item: Pending): void {
  const fn = item.fn;
  if (fn === undefined) return;
  item.fn = undefined;
  pending.delete(item);
  fn();
}

function armBackstop(): void {
  if (backstop !== undefined) return;
  const signal = AbortSignal.timeout(1);
  backstop = signal; // held: Node clears the timer of a signal nobody references
  signal.addEventListener('abort', () => {
    backstop = undefined;
    // Fired in the timers phase, at least one whole iteration (its poll and check phases) after anything
    // marked seen by the previous run was scheduled: a real setImmediate would have run it by now.
    const overdue: Pending[] = [];
    for (const item of pending) {
      if (item.seen) overdue.push(item);
      else item.seen = true;
    }
    for (const item of overdue) run(item);
    if (pending.size > 0) armBackstop();
  });
}

/**
 * The global setImmediate once it has been seen to run what it was given on time (before the backstop):
 * while it is still the global one, afterTurn needs no backstop (a fake that replaces it later is another
 * function, checked again). This spares a busy server an AbortSignal, a timer and a DOMException per
 * millisecond.
 */
let proven: unknown;

/** Whether a function is Node's own setImmediate (lib/timers.js), not a fake standing in for it. */
function isNodes(fn: Fn | typeof setImmediate): boolean {
  return /^function setImmediate\(callback/.test(Function.prototype.toString.call(fn));
}

/** Runs fn once, at the end of this turn of the event loop (its check phase), in real time. */
export function afterTurn(fn: Fn): void {
  const immediate = globalThis.setImmediate;
  if (immediate === proven) {
    immediate(fn);
    return;
  }
  const item: Pending = { fn, seen: false };
  pending.add(item);
  armBackstop();
  if (isFake(immediate)) {
    item.seen = true; // the backstop's next run
    return;
  }
  immediate(() => {
    // Ran before the backstop's next run had seen it twice: a real setImmediate (or one as good).
    if (item.fn !== undefined && !item.seen && isNodes(immediate)) proven = immediate;
    run(item);
  });
}

/** A timer that can be cancelled, and told whether it holds the process alive (ref'd, as it starts). */
export interface TimerHandle {
  cancel(): void;
  ref(on: boolean): void;
}

/** realTimeout's timer on AbortSignal.timeout, which Node runs unref'd: `ref` cannot change that. */
const NO_REF = (): void => undefined;

/**
 * realTimeout as a handle whose hold on the process can change while it is armed (kernel/deadlines.ts: a lane
 * that idles keeps its timer unref'd). On AbortSignal.timeout (under a fake it knows) the timer is unref'd
 * from the start.
 */
export function realTimer(fn: Fn, ms: number): TimerHandle {
  if (!isFake(globalThis.setTimeout)) {
    const clear = globalThis.clearTimeout;
    const timer = globalThis.setTimeout(fn, ms);
    return {
      cancel: () => clear(timer),
      ref: (on) => void (on ? timer.ref?.() : timer.unref?.()),
    };
  }
  let callback: Fn | undefined = fn;
  const signal = AbortSignal.timeout(Math.min(Math.max(Math.ceil(ms), 0), 0xffff_ffff));
  const onAbort = (): void => {
    deadlines.delete(signal);
    const f = callback;
    callback = undefined;
    f?.();
  };
  deadlines.add(signal);
  signal.addEventListener('abort', onAbort, { once: true });
  return {
    cancel: () => {
      callback = undefined;
      deadlines.delete(signal);
      signal.removeEventListener('abort', onAbort);
    },
    ref: NO_REF,
  };
}

/** A real-time timer; the returned function cancels it. An `unref` one keeps no process alive. */
export function realTimeout(fn: Fn, ms: number, unref = false): () => void {
  const timer = realTimer(fn, ms);
  if (unref) timer.ref(false);
  return timer.cancel;
}
