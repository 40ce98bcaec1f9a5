import type { ServerResponse } from 'node:http';
import { begin, end } from './completion';

/*
 * Node's http module, in this one module of core: what waits on a Node response (its end, a client that
 * left). The rest of core never names ServerResponse, so an adapter for a framework without one never
 * meets it: such an adapter hands a ResponseEnd instead, and each function below waits on that.
 */
export { STATUS_CODES } from 'node:http';
export type { ServerResponse } from 'node:http';

/**
 * The end of a response for a framework without a Node ServerResponse (Hono on the Web standard Request and
 * Response): `onEnd(listener)` calls `listener` once, when the response is over: `true` when it was sent in
 * full, `false` when the client went away first. A response already over calls it at once. Returns a
 * function that stops listening.
 */
export interface ResponseEnd {
  onEnd(listener: (finished: boolean) => void): () => void;
}

/** What the functions below wait on: a Node response, or an adapter's ResponseEnd. */
export type ResponseLike = ServerResponse | ResponseEnd;

const isResponseEnd = (res: ResponseLike): res is ResponseEnd => typeof (res as Partial<ResponseEnd>).onEnd === 'function';

/**
 * Calls `done` once when a Node response is over: `finished` true when it was sent in full ('finish'),
 * false when the connection closed first (the client went away, or the server destroyed it). A response
 * already over when this is called (the client left while its check was in flight) is reported at once.
 */
export function whenResponseDone(res: ResponseLike, done: (finished: boolean) => void): void {
  // Counted until `done` has run (what it sets off counts itself): settled() waits for the response.
  begin();
  if (isResponseEnd(res)) return void res.onEnd((finished) => report(done, finished));
  if (res.writableFinished) return report(done, true);
  if (res.destroyed || res.closed) return report(done, false);
  let over = false;
  const once = (finished: boolean): void => {
    if (over) return;
    over = true;
    res.off('finish', onFinish);
    res.off('close', onClose);
    report(done, finished);
  };
  const onFinish = (): void => once(true);
  const onClose = (): void => once(res.writableFinished);
  res.once('finish', onFinish);
  res.once('close', onClose);
}

/** Runs whenResponseDone()'s `done`, then ends the response's count. */
function report(done: (finished: boolean) => void, finished: boolean): void {
  try {
    done(finished);
  } finally {
    end();
  }
}

/**
 * Waits `ms` unless `res` closes first: true when the time is up and the response is still open, false
 * (at once, the timer cleared) when the client went away. Nothing is kept for a client that left.
 */
export function pause(res: ResponseLike, ms: number): Promise<boolean> {
  if (isResponseEnd(res)) return pauseUntilEnd(res, ms);
  const open = (): boolean => !res.closed && !res.destroyed && !res.writableEnded;
  if (!open()) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  // Counted while it waits: a test that awaits settled() after its client left sees the delay end first.
  begin();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off('close', done);
      resolve(open());
      end();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

/**
 * Returns `hold(release)`: `release` runs once, when `res` finishes or its connection closes. Listening
 * starts at once, so a client that leaves while its lease is being acquired is seen; `hold` returns false
 * (keeping nothing) when the response already ended. The response is counted until it ends, a held
 * release run (completion.ts, settled()).
 */
export function endOf(res: ResponseLike): (release: () => void) => boolean {
  if (isResponseEnd(res)) return holdUntilEnd(res);
  let ended = res.closed || res.writableFinished;
  let release: (() => void) | undefined;
  const over = (): void => {
    if (ended) return;
    ended = true;
    res.off('finish', over);
    res.off('close', over);
    releaseHeld(release);
  };
  if (!ended) {
    begin();
    res.once('finish', over).once('close', over);
  }
  return (fn) => {
    if (ended) return false;
    release = fn;
    return true;
  };
}

/** Runs what endOf() held, if anything, then ends the response's count (what the release sets off counts itself). */
function releaseHeld(release: (() => void) | undefined): void {
  try {
    release?.();
  } finally {
    end();
  }
}

/** pause() on a ResponseEnd: false at once when the response is over, or as soon as it ends during the wait. */
function pauseUntilEnd(response: ResponseEnd, ms: number): Promise<boolean> {
  begin(); // counted while it waits, as pause() counts
  return new Promise((resolve) => {
    let waiting = true;
    const answer = (open: boolean): void => {
      if (!waiting) return;
      waiting = false;
      resolve(open);
      end();
    };
    const timer =
      ms > 0
        ? setTimeout(() => {
            stop();
            answer(true);
          }, ms)
        : undefined;
    // Called at once when the response is already over: the timer is cleared and the answer is false.
    const stop = response.onEnd(() => {
      clearTimeout(timer);
      answer(false);
    });
    if (timer === undefined) {
      stop();
      answer(true);
    }
  });
}

/** endOf() on a ResponseEnd. */
function holdUntilEnd(response: ResponseEnd): (release: () => void) => boolean {
  let ended = false;
  let release: (() => void) | undefined;
  begin();
  response.onEnd(() => {
    ended = true;
    releaseHeld(release);
  });
  return (fn) => {
    if (ended) return false;
    release = fn;
    return true;
  };
}

/**
 * Adds one item to a list header (RateLimit, RateLimit-Policy) of a Node response, as Express's res.append
 * and Koa's ctx.append do: one read and one write of the response's headers, without the frameworks'
 * get/set wrappers (or Node's appendHeader, which validates the header twice when it is new).
 */
export function appendHeaderItem(res: ServerResponse, name: string, value: string): void {
  const prev = res.getHeader(name);
  res.setHeader(name, prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [String(prev), value]);
}
