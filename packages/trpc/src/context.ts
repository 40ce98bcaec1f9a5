import type { IncomingMessage } from 'node:http';
import { watchServerOf } from '@floodgate/core/adapter';
import { ResponseRecord } from './response-record';

/*
 * What the middleware needs from a request, put on the context when tRPC makes it (createContext): the
 * client's address, as the HTTP server underneath resolved it, and the record of the response's
 * rate-limit headers. Spread it into your context: `createContext: ({ req }) => ({ ...rateLimitContext(req) })`.
 */

/** What rateLimitContext() adds to a context. */
export interface RateLimitContext {
  /** The client's address, as the server underneath resolved it; the middleware's default `ip:` identifier. */
  clientAddress: string | undefined;
  /** The response's rate-limit headers, which rateLimitResponseMeta writes (shared by the calls of a batch). */
  rateLimitResponse: ResponseRecord;
}

/** A Node request, as the standalone, Node and Express adapters hand it to createContext. */
type NodeRequest = Pick<IncomingMessage, 'socket'> & { ip?: unknown };

/**
 * The client address of a Node request: Express's `req.ip` when an Express app serves tRPC (its `trust
 * proxy` setting decides it), else the connection's peer (the standalone and Node adapters have no notion
 * of a proxy: X-Forwarded-For never counts). The peer's address is read on accept, so a client that resets
 * its connection at once is still known (docs/security.md, "Unknown client address").
 */
export function nodeClientAddress(req: NodeRequest): string | undefined {
  if (typeof req.ip === 'string') return req.ip;
  watchServerOf(req.socket);
  return req.socket?.remoteAddress;
}

/** The context's part for a Node request (standalone, `@trpc/server/adapters/node-http`, Express). */
export function rateLimitContext(req: NodeRequest): RateLimitContext {
  return { clientAddress: nodeClientAddress(req), rateLimitResponse: new ResponseRecord() };
}
