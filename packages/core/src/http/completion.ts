import { shared } from '../kernel/state';
import { afterTurn, realTimeout } from '../kernel/real-timers';

/*
 * What a response sets off once it is over, counted so a test can await it (docs/testing.md, "Waiting for
 * what a response set off"): a refund (skipSuccessfulRequests, skipFailedRequests), a settle, a
 * concurrency lease's release, and the waits that lead to them (a response Floodgate watches, a slowDown
 * delay, a lease being acquired for a client that may have left, the check of a request whose response
 * will set work off). Each is one count from the moment Floodgate starts watching for it until its store write has
 * answered; settled() resolves once none is left at the end of an event-loop turn.
 *
 * The count is a number in process-wide state (kernel/state.ts): every copy of core in a process counts
 * into it, and a limiter checking a request with nothing to do after its response (no refund options, no
 * settle, no lease) never touches it. Nothing is allocated per request unless a test waits.
 */

interface Work {
  /** Responses watched, delays waited and store writes in flight. */
  count: number;
  /** settled() callers, resolved at the end of a turn that ends with count 0. */
  waiters: (() => void)[];
  /** An end-of-turn look at count is scheduled. */
  armed: boolean;
}

const work = shared<Work>('responseWork.v1', () => ({ count: 0, waiters: [], armed: false }));

/** One more piece of work a response set off (or will, once it is over). */
export function begin(): void {
  work.count++;
}

/** A piece of work begun with begin() is done. */
export function end(): void {
  work.count--;
  if (work.count === 0 && work.waiters.length > 0) arm();
}

/** end(), passing `value` on: a promise callback that ends a count. */
export function ended<T>(value: T): T {
  end();
  return value;
}

/** Counts `pending` (a store write) until it settles, either way: for a write whose failure is reported elsewhere. */
export function track(pending: PromiseLike<unknown>): void {
  begin();
  pending.then(end, end);
}

/*
 * The waiters are resolved at the end of a turn, not the moment the count reaches 0: work is handed on
 * through promise callbacks (a delay over, then the adapter watching the response), and a test's own
 * continuation must not run in the gap between one count ending and the next beginning.
 */
function arm(): void {
  if (work.armed) return;
  work.armed = true;
  afterTurn(() => {
    work.armed = false;
    if (work.count !== 0) return;
    for (const resolve of work.waiters.splice(0)) resolve();
  });
}

/** settled()'s options. */
export interface SettledOptions {
  /**
   * Rejects after this many ms of real time with what is still pending, so a test that keeps a response
   * open says so instead of timing out silently. Default 10,000; `Infinity` waits for as long as it takes.
   */
  timeoutMs?: number;
}

/**
 * Resolves once everything the responses in this process set off has completed: every request of a
 * limiter with something to do after its response (a refund option, `settle`, `concurrency()`) has been
 * checked, its response is over, and its refund, settle or lease release has reached the store (or
 * failed, its warning logged and its event emitted). A test awaits it after its requests, instead of
 * sleeping, before asserting what the store holds, including that something did not happen. A response
 * still open (a handler the test holds, a stream it keeps reading) or a check still in flight (an
 * `identify` the test holds) keeps it waiting.
 */
export function settled(options: SettledOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0) {
    throw new TypeError(`floodgate: settled({ timeoutMs }) must be a non-negative number of ms; got ${String(timeoutMs)}`);
  }
  return new Promise<void>((resolve, reject) => {
    // Called at the end of a turn at the earliest, after `cancel` below is set.
    const done = (): void => {
      cancel?.();
      resolve();
    };
    work.waiters.push(done);
    if (work.count === 0) arm();
    const cancel =
      timeoutMs === Infinity
        ? undefined
        : realTimeout(() => {
            const at = work.waiters.indexOf(done);
            if (at === -1) return;
            work.waiters.splice(at, 1);
            const n = work.count;
            reject(
              new Error(
                `floodgate: settled() waited ${timeoutMs} ms and ${n} response${n === 1 ? ' is' : 's are'} still open or finishing (a refund, settle or lease release in flight, or a response the test keeps open)`,
              ),
            );
          }, timeoutMs);
  });
}

/** How many pieces of response work are pending now (for a test's failure message). */
export function pendingWork(): number {
  return work.count;
}
