import type { Context } from 'hono';
import type { GetConnInfo } from 'hono/conninfo';
import {
  ConfigError,
  describeValue,
  watchServerOf,
  webClientAddress,
  type HttpLimiter,
  type TrustProxyOption,
} from '@floodgate/core/adapter';
import { nodeEnv } from './node-env';

/*
 * The client's address (docs/hono.md, "Client address and proxies"): the connection's peer, from the
 * runtime's connection info, and X-Forwarded-For only as far as `trustProxy` reaches (core's
 * webClientAddress reads the hops and gives the trust-proxy warnings).
 */

/** The options every middleware of this package takes besides core's. */
export interface ClientAddressOptions {
  /**
   * The proxies in front of the app whose X-Forwarded-For is believed: addresses and CIDR ranges
   * (`'10.0.0.0/8'`, `'2001:db8::/32'`), `'loopback'`, `'linklocal'`, `'uniquelocal'`. Default: none, so the client is always the connection's
   * peer and X-Forwarded-For never changes who is counted.
   */
  trustProxy?: Exclude<TrustProxyOption, number>;
  /**
   * The runtime's connection info: `getConnInfo` from `hono/bun`, `hono/deno`, `hono/cloudflare-workers`
   * and so on. Default: Node's, as @hono/node-server serves the app.
   */
  getConnInfo?: GetConnInfo;
}

export const CLIENT_ADDRESS_OPTION_KEYS = ['trustProxy', 'getConnInfo'] as const;

/** Node's connection info, as @hono/node-server's getConnInfo reads it; it also reads each new connection's address on accept. */
function nodeAddress(c: Context): string | undefined {
  const incoming = nodeEnv(c)?.incoming as { socket?: { remoteAddress?: string } } | undefined;
  if (incoming === undefined) {
    throw new Error(
      'floodgate: no Node connection behind this request; on a runtime other than Node pass getConnInfo (from hono/bun, hono/deno, ...)',
    );
  }
  watchServerOf(incoming.socket);
  return incoming.socket?.remoteAddress;
}

/**
 * Validates `trustProxy` and `getConnInfo` (before a limiter is made, so a ConfigError keeps no name taken).
 * Given the limiter's warn, it returns the request -> client address function.
 */
export function clientAddress(options: ClientAddressOptions): (warn: HttpLimiter<Context>['warn']) => (c: Context) => string | undefined {
  const resolve = webClientAddress(options.trustProxy, { hops: false });
  const getConnInfo = options.getConnInfo;
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    throw new ConfigError(
      'getConnInfo',
      `must be a function (c) => ConnInfo, such as hono/bun's getConnInfo; got ${describeValue(getConnInfo)}`,
    );
  }
  return (warn) => {
    const addressOf = resolve(warn);
    return (c) =>
      addressOf(getConnInfo === undefined ? nodeAddress(c) : getConnInfo(c).remote.address, c.req.raw.headers.get('x-forwarded-for'));
  };
}
