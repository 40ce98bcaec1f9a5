import ipaddr from 'ipaddr.js';
import { ConfigError, describeValue } from './errors';

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

/**
 * The client address as a limiting key: IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes the IPv4 address it
 * carries, and IPv6 is cut to its `/subnet` network, because one customer usually owns a whole /56 or /64
 * and could otherwise rotate through billions of addresses (express-rate-limit's `ipv6Subnet`).
 * Returns undefined for a missing address, so no key ever reads `ip:undefined`.
 */
export function normaliseIp(ip: string | undefined | null, ipv6Subnet: number | false): string | undefined {
  if (typeof ip !== 'string' || ip.length === 0) return undefined;
  // Hot path: canonical dotted IPv4 (no leading zeros) is already what ipaddr would print; parsing it on
  // every request was ~1% of a Fastify server's CPU in the benchmark profile.
  if (CANONICAL_IPV4.test(ip)) return ip;
  // A zone index (`fe80::1%eth0`) names an interface, not a client.
  const bare = ip.includes('%') ? ip.slice(0, ip.indexOf('%')) : ip;
  if (!ipaddr.isValid(bare)) return ip;
  const addr = ipaddr.process(bare);
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

/** `ip:<normalised ip>` and, when there is a user, `user:<id>`; either may be absent. */
export function defaultIdentifiers(facts: RequestFacts, ipv6Subnet: number | false): string[] {
  const ids: string[] = [];
  const ip = normaliseIp(facts.ip, ipv6Subnet);
  if (ip !== undefined) ids.push(`ip:${ip}`);
  const user = userKey(facts.user);
  if (user !== undefined) ids.push(`user:${user}`);
  return ids;
}

/**
 * The result of `identify(req, defaults)`: a string replaces the defaults; an array is the full list
 * (spread `defaults` into it to extend them). Empty and non-string entries are dropped, never stringified.
 */
export function identifiersFrom(result: unknown): string[] {
  if (typeof result === 'string') return result.length > 0 ? [result] : [];
  if (!Array.isArray(result)) return [];
  return result.filter((id): id is string => typeof id === 'string' && id.length > 0);
}
