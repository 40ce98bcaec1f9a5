import type { IncomingMessage } from 'node:http';
import { watchServerOf } from '@floodgate/core/adapter';
import { ResponseRecord } from './response-record';

/*
 * What the middleware needs from a request, put on the context when tRPC makes it (createContext): the
 * client's address as the server underneath resolved it, X-Forwarded-For when that server did not read it
 * (the middleware's `trustProxy` decides whether it counts), and the record of the response's rate-limit
 * headers. Spread it into your context: `createContext: ({ req }) => ({ ...rateLimitContext(req) })`.
 */

/** What rateLimitContext() adds to a context. */
export interface RateLimitContext {
  /** The client's address as the server underneath resolved it (the connection's peer, or Express's `req.ip`). */
  clientAddress: string | undefined;
  /** X-Forwarded-For as it arrived, when the server underneath did not resolve it (Express did): `trustProxy` reads it. */
  forwardedFor: string | undefined;
  /** The response's rate-limit headers, which rateLimitResponseMeta writes (shared by the calls of a batch). */
  rateLimitResponse: ResponseRecord;
}

/** A Node request, as the standalone, Node and Express adapters hand it to createContext. */
export type NodeRequest = Pick<IncomingMessage, 'socket' | 'headers'> & { ip?: unknown };

/** A Fetch API request (the fetch adapter, Next.js route handlers), as far as it is read. */
export type FetchRequest = Pick<Request, 'headers'>;

/** Options for a Fetch request, whose connection the Web standard does not expose. */
export interface FetchContextOptions {
  /** The connection's peer address, when the runtime gives it (Bun's `server.requestIP(req)`, Deno's `info.remoteAddr`). */
  peer?: string;
}

const isFetch = (req: NodeRequest | FetchRequest): req is FetchRequest => typeof (req.headers as Partial<Headers>).get === 'function';

/**
 * The context's part for a request: a Node `IncomingMessage` (standalone, `@trpc/server/adapters/node-http`,
 * Express) or a Fetch `Request` (the fetch adapter, Next.js).
 *
 * - Node: Express's `req.ip` when an Express app serves tRPC (its `trust proxy` setting decides it), else the
 *   connection's peer, read on accept, so a client that resets its connection at once is still known
 *   (docs/security.md, "Unknown client address").
 * - Fetch: `options.peer` (the Web standard has no connection address), and X-Forwarded-For for the
 *   middleware's `trustProxy` (Next.js: `trustProxy: 1`, the entry the platform's proxy appended).
 */
export function rateLimitContext(req: NodeRequest | FetchRequest, options: FetchContextOptions = {}): RateLimitContext {
  const rateLimitResponse = new ResponseRecord();
  if (isFetch(req))
    return { clientAddress: options.peer, forwardedFor: req.headers.get('x-forwarded-for') ?? undefined, rateLimitResponse };
  if (typeof req.ip === 'string') return { clientAddress: req.ip, forwardedFor: undefined, rateLimitResponse };
  watchServerOf(req.socket);
  const forwarded = req.headers['x-forwarded-for'];
  return {
    clientAddress: req.socket?.remoteAddress,
    forwardedFor: Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
    rateLimitResponse,
  };
}
