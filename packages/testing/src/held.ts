import { request as httpRequest } from 'node:http';

/*
 * Requests a test holds, so it knows where each one is instead of guessing it with a sleep: a gate the
 * suite app's `GET /slow` handler waits on (AppSpec.slow), and a GET whose client leaves when the test says.
 */

/** What `GET /slow` waits on: `open()` lets every waiting handler answer; `reached(n)` resolves once `n` wait. */
export interface Gate {
  /** AppSpec.slow: called by the handler once it has counted itself. */
  slow(): Promise<void>;
  open(): void;
  /** Handlers waiting now. */
  readonly waiting: number;
  /** Resolves once `n` handlers are waiting (counting those already waiting). */
  reached(n: number): Promise<void>;
}

export function gate(): Gate {
  const waiting: (() => void)[] = [];
  const watchers: { n: number; resolve: () => void }[] = [];
  const check = (): void => {
    for (const w of watchers.filter((x) => waiting.length >= x.n)) {
      watchers.splice(watchers.indexOf(w), 1);
      w.resolve();
    }
  };
  return {
    slow: () =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        check();
      }),
    open: () => waiting.splice(0).forEach((resolve) => resolve()),
    get waiting() {
      return waiting.length;
    },
    reached: (n) =>
      new Promise<void>((resolve) => {
        watchers.push({ n, resolve });
        check();
      }),
  };
}

/** A GET the test holds open: `leave()` destroys its connection before any response; `gone` resolves once it is closed. */
export interface LeavingRequest {
  leave(): void;
  readonly gone: Promise<void>;
}

/** Sends a GET for `path` and reads nothing: the client leaves when the test calls `leave()`. */
export function leavingGet(url: string, path: string, headers: Record<string, string> = {}): LeavingRequest {
  const req = httpRequest(`${url}${path}`, { headers, agent: false });
  const gone = new Promise<void>((resolve) => req.on('close', () => resolve()));
  req.on('error', () => undefined);
  req.end();
  return { leave: () => void req.destroy(), gone };
}
