import type { ResponseEnd } from '../node';

/*
 * When a response is over, on the Web standard Request and Response alone (docs/design.md, "Web-standard
 * frameworks"), for a framework that hands a handler a Request and sends the Response it returns (Hono,
 * Next.js). The client going away aborts the request's signal. Otherwise the response is over once the
 * server has read its body to the end: a body is watched by wrapping it, so a streamed body holds a
 * concurrency slot until its last chunk, and a refund or a settle is judged only on a response that was
 * sent. A response without a body (and every HEAD response) is over when the handler has returned it.
 */

/** One request's end: `over(finished)` once, from the request's signal, the watched body, or the adapter. */
export class WebResponseEnd implements ResponseEnd {
  private outcome: boolean | undefined;
  private readonly listeners = new Set<(finished: boolean) => void>();
  private readonly onAbort = (): void => this.over(false);

  /** `signal`: the request's, whose abort says the client left. Without one, the adapter calls `over` itself. */
  constructor(private readonly signal?: AbortSignal) {
    if (signal === undefined) return;
    if (signal.aborted) this.outcome = false;
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Whether anyone waits for the end (a body is wrapped only then). */
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
 * The response to send for `res`, answering `method`: when someone waits for the end and it has a body,
 * a copy whose body tells `end` when it was read to the end; otherwise `res` itself, and the response is
 * over now (a HEAD response or an informational one sends no body).
 */
export function watchResponse(res: Response, method: string, end: WebResponseEnd): Response {
  if (!end.listened || res.body === null || method === 'HEAD' || res.status < 200) {
    end.over(true);
    return res;
  }
  return new Response(
    watched(res.body, (finished) => end.over(finished)),
    res,
  );
}
