import type { Context, Next } from 'hono';
import type { ServerResponse } from 'node:http';
import { whenResponseDone, type ResponseEnd } from '@floodgate/core/adapter';
import { nodeEnv } from './node-env';

/*
 * When a Hono response is over, on the Web standard Request and Response alone (docs/hono.md, "When a
 * response is over"). The client going away aborts the request's signal. Otherwise the response is over
 * once the server has read its body to the end: a body is watched by wrapping it, so a streamed body holds
 * a concurrency slot until its last chunk, and a refund is judged only on a response that was sent. A
 * response without a body (and every HEAD response: Hono drops the body) is over when the middleware
 * chain returns. One watch per request, shared by every Floodgate middleware on it.
 *
 * On @hono/node-server the Node response is at hand (c.env.outgoing): its 'finish' and 'close' say the same
 * without wrapping the body (a wrapped body turns every response into a stream: a tenth of the throughput
 * of a settled request in the benchmark) and without the request's AbortSignal, which node-server makes
 * on first use.
 */

class Watch implements ResponseEnd {
  private outcome: boolean | undefined;
  private readonly listeners = new Set<(finished: boolean) => void>();
  private readonly onAbort = (): void => this.over(false);

  /** Without a signal, the Node response's end calls `over` (watchOf). */
  constructor(private readonly signal?: AbortSignal) {
    if (signal === undefined) return;
    if (signal.aborted) this.outcome = false;
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Whether the Node response tells the end (no body to watch). */
  get node(): boolean {
    return this.signal === undefined;
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
    this.signal?.removeEventListener('abort', this.onAbort);
    for (const listener of this.listeners) listener(finished);
    this.listeners.clear();
  }
}

const watches = new WeakMap<Context, Watch>();

/** @hono/node-server's Node response for this request (c.env.outgoing), when the app runs there. */
function nodeResponse(c: Context): ServerResponse | undefined {
  const outgoing = nodeEnv(c)?.outgoing as Partial<ServerResponse> | undefined;
  return typeof outgoing?.once === 'function' && typeof outgoing.writableFinished === 'boolean' ? (outgoing as ServerResponse) : undefined;
}

/** The request's watch; `owner` when this middleware made it, and so must call `nextThenWatch` with it. */
export function watchOf(c: Context): { end: ResponseEnd; owner: boolean } {
  const found = watches.get(c);
  if (found !== undefined) return { end: found, owner: false };
  const outgoing = nodeResponse(c);
  const made = new Watch(outgoing === undefined ? c.req.raw.signal : undefined);
  if (outgoing !== undefined) whenResponseDone(outgoing, (finished) => made.over(finished));
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
  if (watch === undefined || watch.node) return;
  const res = c.res;
  if (!watch.listened || res.body === null || c.req.raw.method === 'HEAD' || res.status < 200) return watch.over(true);
  c.res = new Response(
    watched(res.body, (finished) => watch.over(finished)),
    res,
  );
}
