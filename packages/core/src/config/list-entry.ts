import ipaddr from 'ipaddr.js';
import { ConfigError, describeValue } from '../kernel/errors';

/*
 * One allow or deny entry read (docs/lists.md, "What an entry may be"): an identifier of a kind the limiter
 * knows, or an IP address or CIDR range in a form a request's address is read in (http/identity.ts, normaliseIp),
 * so that the entry matches exactly the requests it names. A spelling of the same address is normalised
 * (IPv6 case, leading zeros and `::`, brackets, IPv4-mapped IPv6 as the IPv4 it carries); a form that some
 * parser reads as another address, or that no request's address is ever read as, is a ConfigError naming
 * the entry: before, such entries were kept as identifiers that never matched anything.
 */

/** An entry read: an identifier to match exactly, or a network (an address is a /32 or /128). */
export type ListEntry = { id: string } | { network: ipaddr.IPv4 | ipaddr.IPv6; bits: number };

/** The kinds of the identifiers the adapters derive from every request. */
export const BUILT_IN_KINDS: readonly string[] = ['ip', 'user'];

const MAX_ENTRY_LENGTH = 512;
/** Hex digits, dots, colons, brackets and an `x` (before any `/prefix` or `%zone`): meant as an address. */
const ADDRESS_CHARS = /^\[?[0-9a-fx.:]+\]?$/i;
const PREFIX = /^(?:0|[1-9]\d{0,2})$/;
/** `::a.b.c.d`: the deprecated IPv4-compatible spelling, which ipaddr.js reads as IPv4-mapped. */
const COMPATIBLE_SPELLING = /^::\d+\./;

/** Reads one entry of a list; anything other than an identifier of a known kind or a canonical address throws. */
export function parseListEntry(entry: unknown, option: string, kinds: ReadonlySet<string>): ListEntry {
  if (typeof entry !== 'string' || entry.length === 0 || entry.length > MAX_ENTRY_LENGTH || entry.trim() !== entry) {
    throw new ConfigError(
      option,
      `must be an IP address, a CIDR range or an identifier (a non-empty string of at most ${MAX_ENTRY_LENGTH} characters, no surrounding space); got ${describeValue(entry)}`,
    );
  }
  // `ip:10.0.0.0/8` is the same rule as `10.0.0.0/8`: the adapters' identifiers have that form.
  if (entry.startsWith('ip:')) return parseNetwork(entry.slice(3), entry, option);
  const colon = entry.indexOf(':');
  const kind = colon > 0 ? entry.slice(0, colon) : '';
  // A kind made of hex digits (`cafe:…`) could start an IPv6 address: an entry that is one is one.
  if (kinds.has(kind) && !(ipaddr.IPv6.isValid(entry.split('/', 1)[0]!) && /^[0-9a-f]{1,4}$/i.test(kind))) {
    if (colon === entry.length - 1) throw new ConfigError(option, `names the kind '${kind}' but no identifier: ${describeValue(entry)}`);
    return { id: entry };
  }
  if (looksLikeAddress(entry)) return parseNetwork(entry, entry, option);
  throw new ConfigError(option, unknownKind(entry, kind, kinds));
}

function looksLikeAddress(text: string): boolean {
  const head = text.split('/', 1)[0]!.replace(/%.*$/, '');
  return ADDRESS_CHARS.test(head) && (head.includes('.') || head.split(':').length > 2 || /^(?:\d+|0x[0-9a-f]+)$/i.test(head));
}

function unknownKind(entry: string, kind: string, kinds: ReadonlySet<string>): string {
  const known = [...kinds].join(', ');
  if (kind === '') {
    return `is neither an IP address or CIDR range nor an identifier of the form kind:value (known kinds: ${known}): ${describeValue(entry)}`;
  }
  const meant = [...kinds].find((k) => k.toLowerCase() === kind.toLowerCase());
  if (meant !== undefined) {
    return `has the kind '${kind}', but kinds are case-sensitive (did you mean ${describeValue(meant + entry.slice(kind.length))}?): ${describeValue(entry)}`;
  }
  return `has the kind '${kind}', which no identifier of this limiter has (known kinds: ${known}; declare others in \`identifierKinds\`, or scope a rule to them with \`for\`): ${describeValue(entry)}`;
}

/** An address or range (`text`, the entry without `ip:`) in a form a request's address is read in. */
function parseNetwork(text: string, entry: string, option: string): ListEntry {
  return readNetwork(text, (why) => {
    throw new ConfigError(option, `${why}: ${describeValue(entry)}`);
  });
}

/** parseNetwork's reading: `refuse` gets why a form is not one a request's address is read in. */
function readNetwork(text: string, refuse: (why: string) => never): { network: ipaddr.IPv4 | ipaddr.IPv6; bits: number } {
  const slash = text.indexOf('/');
  let head = slash === -1 ? text : text.slice(0, slash);
  const bracketed = head.startsWith('[') && head.endsWith(']');
  if (bracketed) head = head.slice(1, -1);
  if (head.includes('%'))
    refuse(
      `has a zone index, which names an interface of this host, not a client (client addresses are read without it): write the address alone`,
    );
  let network: ipaddr.IPv4 | ipaddr.IPv6;
  if (!head.includes(':')) {
    if (!ipaddr.IPv4.isValidFourPartDecimal(head)) {
      const reading = ipaddr.IPv4.isValid(head)
        ? ` (some parsers read it as ${ipaddr.IPv4.parse(head).toString()}, others not at all)`
        : '';
      refuse(`is not an IPv4 address in the form client addresses are read in: four decimal parts without leading zeros${reading}`);
    }
    if (bracketed) refuse('has brackets, which only an IPv6 address takes');
    network = ipaddr.IPv4.parse(head);
  } else {
    if (!ipaddr.IPv6.isValid(head)) refuse('is not a valid IPv4 or IPv6 address or CIDR range');
    const dotted = head.lastIndexOf(':');
    if (head.includes('.') && !ipaddr.IPv4.isValidFourPartDecimal(head.slice(dotted + 1))) {
      refuse('has an embedded IPv4 part that is not four decimal parts without leading zeros');
    }
    if (COMPATIBLE_SPELLING.test(head)) refuse(compatible(head));
    network = ipaddr.IPv6.parse(head);
  }
  const max = network.kind() === 'ipv4' ? 32 : 128;
  let bits = max;
  if (slash !== -1) {
    const prefix = text.slice(slash + 1);
    if (!PREFIX.test(prefix) || Number(prefix) > max) refuse(`has a prefix length that is not a decimal number from 0 to ${max}`);
    bits = Number(prefix);
  }
  if (network.kind() === 'ipv6') [network, bits] = embedded(network as ipaddr.IPv6, bits, head, refuse);
  const bytes = network.toByteArray();
  const masked = maskBytes(bytes, bits);
  if (masked.some((b, i) => b !== bytes[i])) {
    refuse(
      `has bits set past its /${bits} prefix: write the network ${ipaddr.fromByteArray(masked).toString()}/${bits}, or the address alone`,
    );
  }
  return { network, bits };
}

/** An address's bytes with every bit past the first `bits` cleared. */
function maskBytes(bytes: readonly number[], bits: number): number[] {
  return bytes.map((b, i) => b & (0xff << (8 - Math.max(0, Math.min(8, bits - i * 8)))) & 0xff);
}

/**
 * How checks key an IPv6 client (the adapters' `ipv6Subnet`, http/identity.ts): a prefix length of 32 to 64,
 * or false for each address alone. ANY_IPV6_KEYING: every one of them (what an application may set).
 */
export type Ipv6Keying = number | false;
export const ANY_IPV6_KEYING: readonly Ipv6Keying[] = [...Array.from({ length: 33 }, (_, i) => 32 + i), false];
/** The adapters' default keying: a /56 (http/identity.ts, DEFAULT_IPV6_SUBNET). */
const DEFAULT_KEYING = 56;

/** An operator's identifier that names an address in a form no check holds: why, and the identifier meant (none for a range). */
export interface IdentifierMistake {
  why: string;
  meant: string | undefined;
}

/**
 * Whether an identifier an operator typed (an override's, the command line's) names a client's address in
 * a form no check holds, read as the lists read addresses. A check names a client by `ip:` and its address
 * as the adapters key it: IPv4 alone, IPv6 by its network at one of `keyings` (`ipv6Subnet`), or alone
 * (false). Undefined when the identifier is fine as typed: not an address (any other identifier is taken as
 * it is, `ip:unknown` included), or exactly a form a check holds.
 */
export function identifierMistake(identifier: string, keyings: readonly Ipv6Keying[]): IdentifierMistake | undefined {
  const kinded = identifier.startsWith('ip:');
  const text = kinded ? identifier.slice(3) : identifier;
  // Written as an address: dotted, or with colons. A number alone (`ip:1`) is a name, as typed.
  if (!looksLikeAddress(text) || !/[.:]/.test(text)) return undefined;
  let refused = '';
  let read: { network: ipaddr.IPv4 | ipaddr.IPv6; bits: number };
  try {
    read = readNetwork(text, (why) => {
      refused = why;
      throw new Error(why);
    });
  } catch {
    // A bare word that only looks like an address (`cafe:1:2`) is an identifier with a kind; after `ip:`, a mistake.
    return kinded ? { why: refused, meant: undefined } : undefined;
  }
  const { network, bits } = read;
  const prefixed = text.includes('/');
  const meant = keyedAs(network, bits, prefixed, keyings);
  if (meant === undefined) {
    return { why: 'names a range of addresses, and a check names one client: for a range use the allow and deny lists', meant };
  }
  if (meant === identifier) return undefined;
  if (!kinded) return { why: 'has no kind', meant };
  if (network.kind() === 'ipv6' && meant.includes('/') && meant.slice(meant.lastIndexOf('/')) !== `/${prefixed ? bits : 128}`) {
    return {
      why: `names ${prefixed ? `a /${bits} network` : 'one IPv6 address'}, and checks key an IPv6 client by its ${meant.slice(meant.lastIndexOf('/'))} network (ipv6Subnet)`,
      meant,
    };
  }
  return { why: 'is not written as checks write it', meant };
}

/** The identifier a check gives the client of this address or network; undefined for a range no check names. */
function keyedAs(network: ipaddr.IPv4 | ipaddr.IPv6, bits: number, prefixed: boolean, keyings: readonly Ipv6Keying[]): string | undefined {
  if (network.kind() === 'ipv4') return bits === 32 ? `ip:${network.toString()}` : undefined;
  if (bits === 128 && keyings.includes(false)) return `ip:${network.toString()}`;
  const numbers = keyings.filter((k): k is number => k !== false);
  if (prefixed && numbers.includes(bits)) return `ip:${network.toString()}/${bits}`;
  if (prefixed && bits < Math.min(...numbers)) return undefined;
  const n = numbers.includes(DEFAULT_KEYING) || numbers.length === 0 ? DEFAULT_KEYING : numbers[0]!;
  return `ip:${ipaddr.fromByteArray(maskBytes(network.toByteArray(), n)).toString()}/${n}`;
}

/**
 * IPv6 forms that carry an IPv4 address, read as a request's address is: IPv4-mapped (`::ffff:0:0/96`) is the
 * IPv4 address, for entries as for clients; NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) stay IPv6 (a client
 * connects from them as such); IPv4-translated (`::ffff:0:0:0/96`) and IPv4-compatible (`::/96`) are refused:
 * no client connects from them, and an entry in them is most likely a mistyped IPv4-mapped address.
 */
function embedded(v6: ipaddr.IPv6, bits: number, head: string, refuse: (why: string) => never): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (bits < 96) return [v6, bits];
  if (v6.isIPv4MappedAddress()) return [v6.toIPv4Address(), bits - 96];
  const p = v6.parts;
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0xffff && p[5] === 0) {
    refuse(
      `is an IPv4-translated address (::ffff:0:0:0/96), which no client connects from; for the IPv4 client write its IPv4 address (or ::ffff:a.b.c.d)`,
    );
  }
  const loopbackOrNone = bits === 128 && p[6] === 0 && (p[7] === 0 || p[7] === 1);
  if (p.slice(0, 6).every((x) => x === 0) && !loopbackOrNone) refuse(compatible(head));
  return [v6, bits];
}

const compatible = (head: string): string =>
  `is an IPv4-compatible address (::/96, deprecated by RFC 4291 section 2.5.5.1), which no client connects from${head.includes('.') ? ' (and some parsers read as IPv4-mapped)' : ''}; for the IPv4 client write its IPv4 address (or ::ffff:a.b.c.d)`;
