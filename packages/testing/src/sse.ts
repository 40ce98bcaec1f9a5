import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';

/*
 * The suite apps' `GET /stream` (AppSpec.stream): server-sent events produced one at a time on a timer, as a
 * model's tokens are, so a test can read how much a request produced when its settle runs, end it early by
 * resetting the connection, or hold many open at once.
 */

/** How `GET /stream` streams: `x-events` events (default 3, at most 500), one every `x-every-ms` ms (default 5, at most 1000). */
export function streamPlan(headers: IncomingHttpHeaders): { events: number; everyMs: number } {
  const int = (value: unknown, fallback: number, max: number): number => {
    const n = Number(value ?? fallback);
    return Number.isInteger(n) && n >= 0 ? Math.min(n, max) : fallback;
  };
  return { events: int(headers['x-events'], 3, 500), everyMs: int(headers['x-every-ms'], 5, 1000) };
}

/**
 * The events of one `GET /stream` request, `data: <n>\\n\\n` each, produced as they are read; `produced`
 * (AppSpec.stream) is called with each. A consumer that stops reading (the connection closed, the stream
 * destroyed) stops the production.
 */
export async function* sseEvents(
  headers: IncomingHttpHeaders,
  produced?: (headers: IncomingHttpHeaders, n: number) => void,
): AsyncGenerator<string> {
  const { events, everyMs } = streamPlan(headers);
  for (let n = 1; n <= events; n++) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    produced?.(headers, n);
    yield `data: ${n}\n\n`;
  }
}

/** sseEvents() as a Node stream of strings, one event per read (no read-ahead beyond one event). */
export const sseReadable = (headers: IncomingHttpHeaders, produced?: (headers: IncomingHttpHeaders, n: number) => void): Readable =>
  Readable.from(sseEvents(headers, produced), { objectMode: false, highWaterMark: 1 });

/** sseEvents() as a Web standard stream of bytes (Hono), cancelled with the response. */
export function sseWebStream(
  headers: IncomingHttpHeaders,
  produced?: (headers: IncomingHttpHeaders, n: number) => void,
): ReadableStream<Uint8Array> {
  const events = sseEvents(headers, produced);
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await events.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await events.return(undefined);
    },
  });
}
