import ipaddr from 'ipaddr.js';
import { ConfigError, describeValue } from '../kernel/errors';
import { UNKNOWN_IP } from '../scripts/keys';

/** Default IPv6 grouping: a /56 is what most ISPs hand one customer (RIPE-690 §4.2). */
export const DEFAULT_IPV6_SUBNET = 56;

/** Validates `ipv6Subnet`: a prefix length of 32..64, or false to key each IPv6 address on its own. */
export function resolveIpv6Subnet(value: unknown): number | false {
  if (value === undefined) return DEFAULT_IPV6_SUBNET;
  if (value === false) return false;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 32 && value <= 64) return value;
  throw new ConfigError('ipv6Subnet', `must be an integer prefix length from 32 to 64, or false; got ${describeValue(value)}`);
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const CANONICAL_IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
/** `198.51.100.9:51234`: dotted IPv4 and a port, as some proxies write X-Forwarded-For. */
const IPV4_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/;
/** `[2001:db8::1]` or `[2001:db8::1]:443`. */
const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/;

/**
 * The address part of what a framework or proxy reported: whitespace, quotes (RFC 7239), brackets and a
 * port stripped; a zone index (`fe80::1%eth0`) dropped, since it names an interface, not a client.
 */
function bareAddress(raw: string): string {
  let s = raw.trim();
  if (s.length > 1 && s.startsWith('"') && s.endsWith('"')) s = s.slice(1, -1);
  const bracketed = BRACKETED.exec(s);
  if (bracketed) s = bracketed[1]!;
  else {
    const v4 = IPV4_PORT.exec(s);
    if (v4) s = v4[1]!;
  }
  const zone = s.indexOf('%');
  return zone === -1 ? s : s.slice(0, zone);
}

/**
 * The client address as a limiting key: IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes the IPv4 address it
 * carries, and IPv6 is cut to its `/subnet` network, because one customer usually owns a whole /56 or /64
 * and could otherwise rotate through billions of addresses (express-rate-limit's `ipv6Subnet`).
 * Ports, brackets and quotes are stripped first (`198.51.100.9:51234` is 198.51.100.9: a port per
 * connection must not mean a budget per connection). Returns undefined for a missing address and for
 * anything that is still not an IP (only four-part decimal IPv4 and IPv6 are): such a string never becomes
 * a key verbatim; the caller treats the client as unknown (docs/security.md, "Unknown client address").
 */
export function normaliseIp(ip: string | undefined | null, ipv6Subnet: number | false): string | undefined {
  if (typeof ip !== 'string' || ip.length === 0) return undefined;
  // Hot path: canonical dotted IPv4 (no leading zeros) is already what ipaddr would print; parsing it on
  // every request was ~1% of a Fastify server's CPU in the benchmark profile.
  if (CANONICAL_IPV4.test(ip)) return ip;
  const bare = bareAddress(ip);
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) addr = ipaddr.IPv4.parse(bare);
  else if (ipaddr.IPv6.isValid(bare)) addr = ipaddr.process(bare);
  else return undefined;
  if (addr.kind() === 'ipv4' || ipv6Subnet === false) return addr.toString();
  const bytes = addr.toByteArray();
  for (let bit = ipv6Subnet; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6Subnet}`;
}

/** A user id as a key part: non-empty strings and finite numbers (0 included); anything else is no user. */
export function userKey(id: unknown): string | undefined {
  if (typeof id === 'string') return id.length > 0 ? id : undefined;
  if (typeof id === 'number') return Number.isFinite(id) ? String(id) : undefined;
  if (typeof id === 'bigint') return String(id);
  return undefined;
}

/** What an adapter read from a request: the framework's resolved client IP and the user id, if any. */
export interface RequestFacts {
  ip: string | undefined;
  user?: unknown;
}

/**
 * `ip:<normalised ip>` and, when there is a user, `user:<id>`. When the address is missing or not an IP,
 * the IP part is UNKNOWN_IP: a request is never unlimited because its address could not be read (the
 * HTTP layer decides what `ip:unknown` means: a shared budget, a denial or, by explicit opt-in, nothing).
 */
export function defaultIdentifiers(facts: RequestFacts, ipv6Subnet: number | false): string[] {
  const ip = normaliseIp(facts.ip, ipv6Subnet);
  const user = userKey(facts.user);
  const first = ip === undefined ? UNKNOWN_IP : `ip:${ip}`;
  return user === undefined ? [first] : [first, `user:${user}`];
}

/**
 * The result of `identify(req, defaults)`: a string replaces the defaults; an array is the full list
 * (spread `defaults` into it to extend them). Empty and non-string entries are dropped, never stringified.
 * An empty result means "nothing usable": the caller falls back to the defaults.
 */
export function identifiersFrom(result: unknown): string[] {
  if (typeof result === 'string') return result.length > 0 ? [result] : [];
  if (!Array.isArray(result)) return [];
  return result.filter((id): id is string => typeof id === 'string' && id.length > 0);
}
