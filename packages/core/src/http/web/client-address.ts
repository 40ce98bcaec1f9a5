import ipaddr from 'ipaddr.js';
import { ConfigError, describeValue } from '../../kernel/errors';
import type { WarningName } from '../../kernel/warnings';
import { checkProxyTrust, type TrustSetting } from '../proxy-trust';

/*
 * The client's address for a framework with no notion of a trusted proxy (Hono, Next.js: docs/security.md,
 * "Behind a proxy"): the connection's peer, and X-Forwarded-For only as far as `trustProxy` reaches. The
 * hops are read from the right, the peer first, each trusted one skipped: the first untrusted one is the
 * client (the leftmost when every hop is trusted), as Express's `trust proxy` reads a list of addresses or
 * a number of hops. An entry a client wrote at the front of the header is never believed over a hop.
 */

/**
 * The proxies in front of the app whose X-Forwarded-For is believed: addresses and CIDR ranges
 * (`'10.0.0.0/8'`, `'2001:db8::/32'`), `'loopback'`, `'linklocal'`, `'uniquelocal'`, or the number of proxy
 * hops (1: the peer is your proxy, and the entry it appended is the client).
 */
export type TrustProxyOption = string | readonly string[] | number;

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

/** Whether the hop at `index` (0: the peer, 1: the rightmost X-Forwarded-For entry, ...) is a trusted proxy. */
type Trusts = (address: string | undefined, index: number) => boolean;

function resolveTrust(value: unknown, option: string): { trusts: Trusts; all: boolean } {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new ConfigError(option, `must be a whole number of proxy hops (0 or more); got ${describeValue(value)}`);
    return { trusts: (_, index) => index < value, all: false };
  }
  let ranges: Range[];
  if (value === undefined) ranges = [];
  else if (typeof value === 'string') ranges = rangeOf(value, option);
  else if (Array.isArray(value)) ranges = value.flatMap((entry, i) => rangeOf(entry, `${option}[${i}]`));
  else throw new ConfigError(option, `must be an address, a CIDR range, an array of them or a number of hops; got ${describeValue(value)}`);
  const trusts: Trusts = (text) => {
    const address = text === undefined ? undefined : parse(text.trim());
    return address !== undefined && ranges.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits));
  };
  return { trusts, all: ranges.some(([, bits]) => bits === 0) };
}

/** The client of a request from `peer` carrying `forwarded` (X-Forwarded-For), given what is trusted. */
function clientOf(trusts: Trusts, peer: string | undefined, forwarded: string | null | undefined): string | undefined {
  if (forwarded == null || !trusts(peer, 0)) return peer;
  const hops = forwarded.split(',');
  for (let i = hops.length - 1; i > 0; i--) if (!trusts(hops[i], hops.length - i)) return hops[i]!.trim();
  return hops[0]!.trim();
}

const SETTING: TrustSetting = { name: 'trustProxy', fix: 'set trustProxy to your proxies' };

/** The request -> client address function of one middleware; it warns through its limiter's logger. */
export type WebClientAddress = (peer: string | undefined, forwarded: string | null | undefined) => string | undefined;

/**
 * Validates `trustProxy` (before a limiter is made, so a ConfigError keeps no name taken). Given the
 * limiter's warn, it returns the (peer, X-Forwarded-For) -> client address function, which warns once per
 * process about a setting that trusts everyone and a forwarded header it ignores. `hops: false` refuses a
 * number of hops (an adapter whose peer is always the connection's, where a list says more).
 */
export function webClientAddress(
  trustProxy: unknown,
  { hops = true, setting = SETTING }: { hops?: boolean; setting?: TrustSetting } = {},
): (warn: (name: WarningName, text: string) => void) => WebClientAddress {
  if (!hops && typeof trustProxy === 'number') {
    throw new ConfigError('trustProxy', `takes the proxies' addresses and ranges here, not a number of hops; got ${trustProxy}`);
  }
  const { trusts, all } = resolveTrust(trustProxy, 'trustProxy');
  return (warn) => {
    if (all) checkProxyTrust(warn, setting, () => ({ forwarded: undefined, trustsAll: true }));
    return (peer, forwarded) => {
      if (forwarded != null) checkProxyTrust(warn, setting, () => ({ forwarded, peer, trustsAll: false, ignored: !trusts(peer, 0) }));
      return clientOf(trusts, peer, forwarded);
    };
  };
}
