import ipaddr from 'ipaddr.js';
import type { Context } from 'hono';
import type { GetConnInfo } from 'hono/conninfo';
import { ConfigError, describeValue, warned, watchServerOf, type HttpLimiter } from '@floodgate/core/adapter';
import { nodeEnv } from './node-env';

/*
 * The client's address (docs/hono.md, "Client address and proxies"). Hono has no notion of a trusted
 * proxy: the address is the connection's peer, from the runtime's connection info, and X-Forwarded-For
 * counts only when that peer is a proxy `trustProxy` lists. Then the hops are read from the right, each
 * trusted one skipped: the first untrusted hop is the client (the leftmost when every hop is trusted),
 * as Express's `trust proxy` reads a list of addresses.
 */

/** The options every middleware of this package takes besides core's. */
export interface ClientAddressOptions {
  /**
   * The proxies in front of the app whose X-Forwarded-For is believed: addresses and CIDR ranges
   * (`'10.0.0.0/8'`, `'2001:db8::/32'`) or `'loopback'`, `'linklocal'`, `'uniquelocal'`. Default: none, so the
   * client is always the connection's peer and X-Forwarded-For never changes who is counted.
   */
  trustProxy?: string | readonly string[];
  /**
   * The runtime's connection info: `getConnInfo` from `hono/bun`, `hono/deno`, `hono/cloudflare-workers`
   * and so on. Default: Node's, as @hono/node-server serves the app.
   */
  getConnInfo?: GetConnInfo;
}

export const CLIENT_ADDRESS_OPTION_KEYS = ['trustProxy', 'getConnInfo'] as const;

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** proxy-addr's named ranges, as Express's `trust proxy` takes them. */
const NAMED: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** An address as the connection or a proxy wrote it (IPv4-mapped IPv6 as its IPv4); undefined if it is not one. */
function parse(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  return ipaddr.IPv6.isValid(text) ? ipaddr.process(text) : undefined;
}

function rangeOf(entry: unknown, option: string): Range[] {
  if (typeof entry === 'string' && NAMED[entry] !== undefined) return NAMED[entry].flatMap((e) => rangeOf(e, option));
  const [head = '', bits, ...rest] = typeof entry === 'string' ? entry.split('/') : [];
  const address = parse(head);
  const max = address?.kind() === 'ipv4' ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (address === undefined || rest.length > 0 || !(prefix <= max)) {
    throw new ConfigError(
      option,
      `must be an IP address, a CIDR range or 'loopback', 'linklocal', 'uniquelocal'; got ${describeValue(entry)}`,
    );
  }
  const network = (address.kind() === 'ipv4' ? ipaddr.IPv4 : ipaddr.IPv6).networkAddressFromCIDR(`${address.toString()}/${prefix}`);
  if (network.toString() !== address.toString()) {
    throw new ConfigError(
      option,
      `${describeValue(entry)} has host bits set past its prefix; write the network (${network.toString()}/${prefix})`,
    );
  }
  return [[address, prefix]];
}

function resolveTrust(value: unknown): Range[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return rangeOf(value, 'trustProxy');
  if (!Array.isArray(value))
    throw new ConfigError('trustProxy', `must be an address, a CIDR range or an array of them; got ${describeValue(value)}`);
  return value.flatMap((entry, i) => rangeOf(entry, `trustProxy[${i}]`));
}

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
 * Given the limiter's warn, it returns the request -> client address function, which warns (once, through
 * the limiter's logger) about a setting that trusts everyone and a forwarded header it ignores.
 */
export function clientAddress(options: ClientAddressOptions): (warn: HttpLimiter<Context>['warn']) => (c: Context) => string | undefined {
  const trusted = resolveTrust(options.trustProxy);
  const getConnInfo = options.getConnInfo;
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    throw new ConfigError(
      'getConnInfo',
      `must be a function (c) => ConnInfo, such as hono/bun's getConnInfo; got ${describeValue(getConnInfo)}`,
    );
  }
  const trustsAll = trusted.some(([, bits]) => bits === 0);
  const isTrusted = (text: string | undefined): boolean => {
    const address = text === undefined ? undefined : parse(text.trim());
    return address !== undefined && trusted.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits));
  };
  const addressOf = (c: Context, warn: HttpLimiter<Context>['warn']): string | undefined => {
    const peer = getConnInfo === undefined ? nodeAddress(c) : getConnInfo(c).remote.address;
    if (trusted.length === 0 && warned('forwarded-header-untrusted')) return peer;
    const forwarded = c.req.raw.headers.get('x-forwarded-for');
    if (forwarded === null) return peer;
    if (!isTrusted(peer)) {
      warn(
        'forwarded-header-untrusted',
        trusted.length === 0
          ? 'X-Forwarded-For arrived but trustProxy is not set, so every client behind that proxy shares one limit; set trustProxy to your proxies'
          : `X-Forwarded-For arrived from ${String(peer)}, which trustProxy does not list: the header was ignored (if that is your proxy, every client behind it shares one limit)`,
      );
      return peer;
    }
    const hops = forwarded.split(',');
    for (let i = hops.length - 1; i > 0; i--) if (!isTrusted(hops[i])) return hops[i]!.trim();
    return hops[0]!.trim();
  };
  return (warn) => {
    if (trustsAll) {
      warn(
        'trust-proxy-all',
        'trustProxy covers every address, so any client can choose its IP with X-Forwarded-For; list only your proxies',
      );
    }
    return (c) => addressOf(c, warn);
  };
}
