import { subscribe } from 'node:diagnostics_channel';

/*
 * The connection's peer, which Next.js does not hand to the proxy, a route handler or a server action.
 * `next start` fills X-Forwarded-For with the peer only when the client sent none (`??=`), so the header
 * alone cannot tell a proxy's entry from one a client wrote. Node announces every request on the
 * `http.server.request.start` diagnostics channel with its socket, before Next reads it: there the peer is
 * written into a request header of our own, overwriting whatever a client sent under that name. A flag on
 * globalThis (every bundle of the app sees the same one) says the stamp is on in this process; without
 * it the header is never believed.
 */

export const PEER_HEADER = 'x-floodgate-peer';
const STAMPING = Symbol.for('floodgate.next.peer-stamp');

interface ServerSocket {
  socket: { remoteAddress?: string };
}

/**
 * Reads a new connection's peer address on accept (Node's `net.server.socket` channel), into Node's cache.
 * Node reads it lazily, on first use: a client that sends its request and resets the connection at once has
 * left nothing to read by the time the request starts, and would be `ip:unknown` (docs/security.md, "Unknown
 * client address"). What this cannot catch, a reset that beat the accept, still is.
 */
function remember(message: unknown): void {
  void (message as ServerSocket).socket?.remoteAddress;
}

interface RequestStart {
  request: { headers: Record<string, string | string[] | undefined> };
  socket: { remoteAddress?: string };
}

function stamp(message: unknown): void {
  const { request, socket } = message as RequestStart;
  request.headers[PEER_HEADER] = socket.remoteAddress ?? '';
}

/**
 * Writes each request's peer address where Floodgate reads it, for every HTTP server of this process (the
 * address read when its connection was accepted).
 * Called when this package is loaded, and by `@floodgate/next/register` when Node starts (Next loads the
 * app's code, config and instrumentation.ts included, only once its first request has arrived). Idempotent.
 */
export function stampPeers(): void {
  const flags = globalThis as { [STAMPING]?: true };
  if (flags[STAMPING]) return;
  flags[STAMPING] = true;
  subscribe('net.server.socket', remember);
  subscribe('http.server.request.start', stamp);
}

/** The peer of a request whose headers these are; undefined when the stamp is off (or the peer unknown). */
export function peerOf(headers: Headers): string | undefined {
  if ((globalThis as { [STAMPING]?: true })[STAMPING] !== true) return undefined;
  const peer = headers.get(PEER_HEADER);
  return peer === null || peer === '' ? undefined : peer;
}
