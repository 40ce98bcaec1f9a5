import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What a load run records of one check: when it started (performance.now()), how long it took. */
export interface Sample<D> {
  startedAt: number;
  elapsedMs: number;
  decision: D;
}

export interface LoadResult<D> {
  samples: Sample<D>[];
  /**
   * The worst event-loop delay seen during the run (ms). On a 2-core CI box, other test files' processes
   * can starve this one; no deadline can be kept while the loop cannot run, so deadline bounds add this.
   */
  maxLagMs: number;
}

interface Checker<D> {
  check(identifiers: string | readonly string[], options?: { cost?: number }): Promise<D>;
}

/**
 * Keeps `concurrency` checks in flight until `stop()` says so, recording each. Checks are awaited one
 * after another per worker (as requests of a busy server would be), with a macrotask yield between them
 * so the fault-injecting test code and ioredis's socket handlers get to run.
 */
export async function runLoad<D>(
  limiter: Checker<D>,
  opts: { concurrency: number; stop: (elapsedMs: number) => boolean; identifier?: (n: number) => string; pauseMs?: number },
): Promise<LoadResult<D>> {
  const samples: Sample<D>[] = [];
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const t0 = performance.now();
  let n = 0;
  const worker = async (): Promise<void> => {
    while (!opts.stop(performance.now() - t0)) {
      const id = opts.identifier ? opts.identifier(n++) : 'load';
      const startedAt = performance.now();
      const decision = await limiter.check(id);
      samples.push({ startedAt, elapsedMs: performance.now() - startedAt, decision });
      await new Promise((r) => setTimeout(r, opts.pauseMs ?? 2));
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
  } finally {
    lag.disable();
  }
  // The histogram counts the sampling interval itself in each delay.
  return { samples, maxLagMs: Math.max(lag.max / 1e6 - 5, 0) };
}

/** Live timers in this process (Node's own view), to prove a run leaves none behind. */
export function liveTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

/**
 * A full garbage collection, for tests that show memory is released (jest runs without --expose-gc; V8
 * lets a flag expose gc() to a fresh context at run time).
 */
export function collectGarbage(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const v8 = require('node:v8') as typeof import('node:v8');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const vm = require('node:vm') as typeof import('node:vm');
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}
