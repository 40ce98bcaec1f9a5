import type { Context, Next } from 'hono';
import type { ResponseEnd } from '@floodgate/core/adapter';

/*
 * When a Hono response is over, on the Web standard Request and Response alone (docs/hono.md, "When a
 * response is over"). The client going away aborts the request's signal. Otherwise the response is over
 * once the server has read its body to the end: a body is watched by wrapping it, so a streamed body holds
 * a concurrency slot until its last chunk, and a refund is judged only on a response that was sent. A
 * response without a body (and every HEAD response: Hono drops the body) is over when the middleware
 * chain returns. One watch per request, shared by every Floodgate middleware on it.
 */

class Watch implements ResponseEnd {
  private outcome: boolean | undefined;
  private readonly listeners = new Set<(finished: boolean) => void>();
  private readonly onAbort = (): void => this.over(false);

  constructor(private readonly signal: AbortSignal) {
    if (signal.aborted) this.outcome = false;
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  get listened(): boolean {
    return this.listeners.size > 0;
  }

  onEnd(listener: (finished: boolean) => void): () => void {
    if (this.outcome !== undefined) {
      listener(this.outcome);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  over(finished: boolean): void {
    if (this.outcome !== undefined) return;
    this.outcome = finished;
    this.signal.removeEventListener('abort', this.onAbort);
    for (const listener of this.listeners) listener(finished);
    this.listeners.clear();
  }
}

const watches = new WeakMap<Context, Watch>();

/** The request's watch; `owner` when this middleware made it, and so must call `nextThenWatch` with it. */
export function watchOf(c: Context): { end: ResponseEnd; owner: boolean } {
  const found = watches.get(c);
  if (found !== undefined) return { end: found, owner: false };
  const made = new Watch(c.req.raw.signal);
  watches.set(c, made);
  return { end: made, owner: true };
}

/** `body`, telling `over` when it has been read to the end (true), or cancelled or broken (false). */
function watched(body: ReadableStream<Uint8Array>, over: (finished: boolean) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        controller.close();
        over(true);
      } catch (error) {
        over(false);
        controller.error(error);
      }
    },
    cancel(reason) {
      over(false);
      return reader.cancel(reason);
    },
  });
}

/**
 * Runs the rest of the chain. The owner of the request's watch then watches the response the chain made:
 * its body when it has one and someone listens, else the response is over now. A chain that throws
 * leaves a response no one here can follow: over, unfinished (a refund needs a finished response).
 */
export async function nextThenWatch(c: Context, next: Next, owner: boolean): Promise<void> {
  const watch = owner ? watches.get(c) : undefined;
  try {
    await next();
  } catch (error) {
    watch?.over(false);
    throw error;
  }
  if (watch === undefined) return;
  const res = c.res;
  if (!watch.listened || res.body === null || c.req.raw.method === 'HEAD' || res.status < 200) return watch.over(true);
  c.res = new Response(
    watched(res.body, (finished) => watch.over(finished)),
    res,
  );
}
