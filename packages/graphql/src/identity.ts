import { normaliseIp, userKey } from '@floodgate/core/adapter';
import type { Identity, Resolved } from './options';

/*
 * Who an operation's limits count against, from the server's context (docs/graphql.md, "Identity"). The
 * signed-in user is `context.user.id` unless `user` says otherwise. The client address is what the HTTP layer
 * trusts: `context.req.ip` when the framework set one (Express applies its trust proxy there), else the peer
 * address of the socket of `context.req` (GraphQL Yoga on Node's http, Apollo's standalone server when the
 * context carries `req`). X-Forwarded-For is never read unless an `ip` function reads it. An address that is
 * missing or not an IP is `ip:unknown`: one budget every such client shares, never no limit (core's rule).
 */

interface RequestLike {
  ip?: unknown;
  socket?: { remoteAddress?: unknown } | null;
}

function defaultUser(context: unknown): unknown {
  const user = (context as { user?: unknown } | null | undefined)?.user;
  return typeof user === 'object' && user !== null ? (user as { id?: unknown }).id : undefined;
}

function defaultIp(context: unknown): string | undefined {
  const req = (context as { req?: RequestLike } | null | undefined)?.req;
  if (typeof req !== 'object' || req === null) return undefined;
  if (typeof req.ip === 'string') return req.ip;
  const address = req.socket?.remoteAddress;
  return typeof address === 'string' ? address : undefined;
}

/** The identities of one operation's context, each read once, and only when a limit asks for it. */
export class Identities<Context> {
  private ipId: string | undefined;
  private userId: string | null | undefined;

  constructor(
    private readonly context: Context,
    private readonly options: Resolved<Context>,
  ) {}

  /** `ip:<address>`, or `ip:unknown`. */
  ip(): string {
    if (this.ipId === undefined) {
      const raw = this.options.ip ? this.options.ip(this.context) : defaultIp(this.context);
      const ip = normaliseIp(typeof raw === 'string' ? raw : undefined, this.options.ipv6Subnet);
      this.ipId = ip === undefined ? 'ip:unknown' : `ip:${ip}`;
    }
    return this.ipId;
  }

  /** `user:<id>` when a user is signed in, else the client address. */
  user(): string {
    if (this.userId === undefined) {
      const id = userKey(this.options.user ? this.options.user(this.context) : defaultUser(this.context));
      this.userId = id === undefined ? null : `user:${id}`;
    }
    return this.userId ?? this.ip();
  }

  /** The identity `identity` names; a function that answers nothing usable falls back to the user (or address). */
  of(identity: Identity<Context>): string {
    if (identity === 'user') return this.user();
    if (identity === 'ip') return this.ip();
    const own = identity(this.context);
    return typeof own === 'string' && own.length > 0 ? own : this.user();
  }
}
