import type { ServerResponse } from 'node:http';

/*
 * Node's http module, in this one module of core: what waits on a Node response (its end, a client that
 * left). The rest of core never names ServerResponse, so an adapter for a framework without one never
 * meets it.
 */
export { STATUS_CODES } from 'node:http';
export type { ServerResponse } from 'node:http';

/**
 * Calls `done` once when a Node response is over: `finished` true when it was sent in full ('finish'),
 * false when the connection closed first (the client went away, or the server destroyed it). A response
 * already over when this is called (the client left while its check was in flight) is reported at once.
 */
export function whenResponseDone(res: ServerResponse, done: (finished: boolean) => void): void {
  if (res.writableFinished) return done(true);
  if (res.destroyed || res.closed) return done(false);
  let over = false;
  const end = (finished: boolean): void => {
    if (over) return;
    over = true;
    res.off('finish', onFinish);
    res.off('close', onClose);
    done(finished);
  };
  const onFinish = (): void => end(true);
  const onClose = (): void => end(res.writableFinished);
  res.once('finish', onFinish);
  res.once('close', onClose);
}

/**
 * Waits `ms` unless `res` closes first: true when the time is up and the response is still open, false
 * (at once, the timer cleared) when the client went away. Nothing is kept for a client that left.
 */
export function pause(res: ServerResponse, ms: number): Promise<boolean> {
  const open = (): boolean => !res.closed && !res.destroyed && !res.writableEnded;
  if (!open()) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off('close', done);
      resolve(open());
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

/**
 * Returns `hold(release)`: `release` runs once, when `res` finishes or its connection closes. Listening
 * starts at once, so a client that leaves while its lease is being acquired is seen; `hold` returns false
 * (keeping nothing) when the response already ended.
 */
export function endOf(res: ServerResponse): (release: () => void) => boolean {
  let ended = res.closed || res.writableFinished;
  let release: (() => void) | undefined;
  const end = (): void => {
    if (ended) return;
    ended = true;
    res.off('finish', end);
    res.off('close', end);
    release?.();
  };
  if (!ended) res.once('finish', end).once('close', end);
  return (fn) => {
    if (ended) return false;
    release = fn;
    return true;
  };
}
