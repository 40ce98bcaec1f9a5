import { StoreError } from './errors';
import { afterTurn, realTimeout } from './real-timers';

/**
 * Settles with the store's reply or, after `ms`, with a timeout. When the timer fires, it settles on
 * the next setImmediate so that a reply already sitting in the socket buffer still wins. Real time, even
 * under a test's fake timers (real-timers.ts).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const cancel = realTimeout(() => {
      afterTurn(() => {
        if (settled) return;
        settled = true;
        reject(new StoreError('timeout', `no reply from Redis within ${ms} ms`));
      });
    }, ms);
    promise.then(
      (value) => {
        if (settled) return;
        settled = true;
        cancel();
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        cancel();
        reject(err);
      },
    );
  });
}

export function toStoreError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/Connection is closed|ECONNREFUSED|ECONNRESET|EPIPE|Stream isn't writeable|MaxRetriesPerRequest/i.test(message)) {
    return new StoreError('unavailable', 'Redis connection failed', err);
  }
  return new StoreError('reply', 'Redis answered with an error', err);
}
