/*
 * What the bench server (bench/src/http/apps-next.ts) hands the app before Next loads it: the variant's
 * part (which proxy, the hand-written 429) and, per app the process serves, its Floodgate options (its
 * Redis client, the shape's limits and identifiers). A global, as every bundle of the app sees the same
 * one. Undefined while `next build` loads the modules.
 */
export const bench = globalThis[Symbol.for('floodgate.bench.next')];

/** The header the bench server marks each request with: the index of the app (port) it came in on. */
export const APP_HEADER = 'x-floodgate-bench-app';

/**
 * `make(floodgateOptions)` once per app, on its first request, then the same one for every request of that
 * app: a process serves one app per shape (the smoke run's), each with its own limiter, as one app would.
 */
export function perApp(make) {
  const made = [];
  return (request) => {
    const i = Number(request.headers.get(APP_HEADER));
    return (made[i] ??= make(bench.apps[i]));
  };
}
