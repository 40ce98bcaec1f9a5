import { userInfo } from 'node:os';
import type { ToolExtra } from './types';

/*
 * Who is calling a tool (docs/mcp.md, "Who a call counts against"). The first of:
 *
 * - the transport's auth info (`extra.authInfo`, what the SDK's bearer middleware or the application put on
 *   the request): its subject (`authInfo.extra.sub`, where a token verifier puts a JWT's `sub`), else the
 *   OAuth client id. A client chooses neither: a new session, or a session id it makes up, buys no budget.
 * - the session (`extra.sessionId`): what the Streamable HTTP transport issued on initialize. Without auth
 *   a client can open sessions at will, so a session limits a well-behaved client, not an attacker.
 * - HTTP without either (a stateless transport, no auth): one identity shared by every such caller, so a
 *   caller never goes unlimited for want of one (docs/design.md, invariant 8).
 * - no transport information at all (stdio, in memory): the server process serves the one client that
 *   started it, as the user it runs as; every such process of that user shares its budget.
 */

/** Where a call's identity came from, the part before its first ':'. */
export type IdentitySource = 'user' | 'oauth-client' | 'session' | 'process' | 'anonymous';

/** The identity of calls that arrive over HTTP with neither auth info nor a session. */
export const ANONYMOUS = 'anonymous:http';

let processIdentity: string | undefined;

/** The user this process runs as, read once (userInfo() throws where the uid has no passwd entry). */
export function processIdentityOf(): string {
  if (processIdentity !== undefined) return processIdentity;
  let who: string;
  try {
    who = userInfo().username;
  } catch {
    who = `uid-${process.getuid?.() ?? 'unknown'}`;
  }
  processIdentity = `process:${who}`;
  return processIdentity;
}

/** The default identity of a tool call (see the top of the file). */
export function defaultIdentity(extra: ToolExtra): string {
  const auth = extra.authInfo;
  if (auth !== undefined && auth !== null) {
    const sub = auth.extra?.sub;
    if (typeof sub === 'string' && sub !== '') return `user:${sub}`;
    if (typeof auth.clientId === 'string' && auth.clientId !== '') return `oauth-client:${auth.clientId}`;
  }
  if (typeof extra.sessionId === 'string' && extra.sessionId !== '') return `session:${extra.sessionId}`;
  if (extra.requestInfo !== undefined) return ANONYMOUS;
  return processIdentityOf();
}
