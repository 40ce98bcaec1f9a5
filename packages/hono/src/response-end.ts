import type { Context, Next } from 'hono';
import type { ServerResponse } from 'node:http';
import { WebResponseEnd, watchResponse, whenResponseDone, type ResponseEnd } from '@floodgate/core/adapter';
import { nodeEnv } from './node-env';

/*
 * When a Hono response is over (docs/hono.md, "When a response is over"): core's WebResponseEnd, on the
 * Web standard Request and Response alone: the request's signal, and the response's body read to its end.
 * One watch per request, shared by every Floodgate middleware on it.
 *
 * On @hono/node-server the Node response is at hand (c.env.outgoing): its 'finish' and 'close' say the same
 * without wrapping the body (a wrapped body turns every response into a stream: a tenth of the throughput
 * of a settled request in the benchmark) and without the request's AbortSignal, which node-server makes
 * on first use.
 */

/** A request's end; `node` when the Node response tells it (no body to watch). */
interface Watch {
  end: WebResponseEnd;
  node: boolean;
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
  if (found !== undefined) return { end: found.end, owner: false };
  const outgoing = nodeResponse(c);
  const end = new WebResponseEnd(outgoing === undefined ? c.req.raw.signal : undefined);
  if (outgoing !== undefined) whenResponseDone(outgoing, (finished) => end.over(finished));
  watches.set(c, { end, node: outgoing !== undefined });
  return { end, owner: true };
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
    watch?.end.over(false);
    throw error;
  }
  if (watch === undefined || watch.node) return;
  const res = watchResponse(c.res, c.req.raw.method, watch.end);
  if (res !== c.res) c.res = res;
}
