/*
 * The client's address, read when the connection is accepted (docs/security.md, "Unknown client address").
 *
 * Node reads a socket's peer address lazily (getpeername on first use of `socket.remoteAddress`) and then
 * caches it. A client that sends a whole request and resets the connection at once leaves nothing to read
 * by the time a handler asks: `req.ip`, `request.ip` and `ctx.ip` come back empty. Reading the address in
 * the server's `connection` event, right after accept, puts it in Node's cache before any request is parsed,
 * so the framework's own IP resolution (trust proxy included) still sees it after a reset. What this cannot
 * catch (a reset that beat the accept) is an unknown address, limited as `ip:unknown`.
 */

import { shared } from '../kernel/state';

interface Listening {
  prependListener(event: string, listener: (socket: { remoteAddress?: string }) => void): unknown;
}

const watched = shared('watchedServers', () => new WeakSet<object>());
let lastServer: unknown;

const remember = (socket: { remoteAddress?: string }): void => {
  void socket.remoteAddress;
};

/** Reads every new connection's peer address on accept (plain and TLS); once per server. */
export function watchPeerAddresses(server: unknown): void {
  if (server === lastServer || typeof server !== 'object' || server === null) return;
  lastServer = server;
  if (watched.has(server) || typeof (server as Partial<Listening>).prependListener !== 'function') return;
  watched.add(server);
  (server as Listening).prependListener('connection', remember);
  (server as Listening).prependListener('secureConnection', remember);
}

/** The same for the server a request's socket belongs to (an adapter that never sees the server itself). */
export function watchServerOf(socket: unknown): void {
  watchPeerAddresses((socket as { server?: unknown } | null | undefined)?.server);
}
