import type { Decision } from '../kernel/decision';
import { ArgumentError, describeValue } from '../kernel/errors';

export interface AcquireOptions {
  /** Units to consume (default 1), as in check(). */
  cost?: number;
  /** Longest time to wait in all, in ms (default 60,000; Infinity waits as long as it takes). */
  maxWaitMs?: number;
  /** Aborting stops the wait at once; acquire() then resolves with the last denied decision. */
  signal?: AbortSignal;
}

/** What acquire() needs from a limiter. */
interface Checker {
  check(identifiers: string | readonly string[], options?: { cost?: number }): Promise<Decision>;
  peek(identifiers: string | readonly string[], options?: { cost?: number }): Promise<Decision>;
}

/** Per limiter: the tail of the queue of waiters on each identifier set. */
export type WaitQueues = Map<string, Promise<void>>;

const DEFAULT_MAX_WAIT_MS = 60_000;
/** setTimeout fires at once for delays above 2^31 - 1 ms: longer waits simply have no timer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Resolves true when `promise` settles (never, if undefined), false once `ms` pass or `signal` aborts.
 * Sleeps on a timer: acquire() never polls the store while it waits.
 */
function waitUntil(ms: number, signal: AbortSignal | undefined, promise?: Promise<void>): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    if (signal?.aborted) return resolve(false);
    let timer: NodeJS.Timeout | undefined;
    const finish = (value: boolean): void => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const onAbort = (): void => finish(false);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (ms <= MAX_TIMER_MS) timer = setTimeout(() => finish(false), Math.max(ms, 0));
    promise?.then(() => finish(true));
  });
}

function resolveOptions(options: AcquireOptions | undefined): {
  cost: number | undefined;
  maxWaitMs: number;
  signal: AbortSignal | undefined;
} {
  const maxWaitMs = options?.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  if (typeof maxWaitMs !== 'number' || Number.isNaN(maxWaitMs) || maxWaitMs < 0) {
    throw new ArgumentError(`maxWaitMs must be a non-negative number of milliseconds (or Infinity); got ${describeValue(maxWaitMs)}`);
  }
  const signal = options?.signal;
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.addEventListener !== 'function')) {
    throw new ArgumentError(`signal must be an AbortSignal; got ${describeValue(signal)}`);
  }
  return { cost: options?.cost, maxWaitMs, signal };
}

/**
 * Waits until a check of `identifiers` passes, sleeping for each denial's retryAfterMs. Waiters on the
 * same identifier set are served first come, first served (a chain of promises per set). Gives up at
 * once when the retry time exceeds the wait left, or on abort, resolving with the last denied decision;
 * a waiter that gives up while still queued behind others resolves with a peek, marked not allowed.
 * Denial is a value: this never rejects for one.
 */
export async function acquire(
  limiter: Checker,
  queues: WaitQueues,
  identifiers: string | readonly string[],
  options?: AcquireOptions,
): Promise<Decision> {
  const { cost, maxWaitMs, signal } = resolveOptions(options);
  const deadline = Date.now() + maxWaitMs;
  const key = typeof identifiers === 'string' ? identifiers : [...new Set(identifiers)].sort().join('\n');
  const ahead = queues.get(key);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = ahead ? ahead.then(() => mine) : mine;
  queues.set(key, tail);
  try {
    if (ahead && !(await waitUntil(deadline - Date.now(), signal, ahead))) {
      const peeked = await limiter.peek(identifiers, { cost });
      return peeked.allowed ? { ...peeked, allowed: false, reason: 'limit', retryAfterMs: Math.max(peeked.retryAfterMs, 1) } : peeked;
    }
    for (;;) {
      const decision = await limiter.check(identifiers, { cost });
      if (decision.allowed || signal?.aborted || decision.retryAfterMs > deadline - Date.now()) return decision;
      await waitUntil(Math.max(decision.retryAfterMs, 1), signal);
      if (signal?.aborted) return decision;
    }
  } finally {
    release();
    if (queues.get(key) === tail) queues.delete(key);
  }
}
