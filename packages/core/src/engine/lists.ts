import ipaddr from 'ipaddr.js';
import { ConfigError, describeValue } from '../kernel/errors';
import { parseListEntry } from '../config/list-entry';
import { assertKnownOptions, ownOptions } from '../config/own-options';

/*
 * Allow and deny lists (docs/lists.md): IP addresses, CIDR ranges and identifiers, compiled once (at
 * construction or by setLists) into sets a check asks in process, with no store call.
 *
 * An IP rule matches the client's address: an identifier `ip:<address>` of a check (what the adapters
 * derive, IPv4-mapped IPv6 already turned into IPv4), and in the adapters the client address itself, exact
 * (not the /56 group its identifier is keyed on). An identifier rule matches an identifier of the check
 * exactly. Deny wins over allow. What an entry may be, and which forms are refused: config/list-entry.ts.
 */

/** The lists as an application writes them. */
export interface ListsInput {
  /** Never limited, no rate-limit headers: addresses (`'10.1.2.3'`), ranges (`'10.0.0.0/8'`, `'2001:db8::/32'`), identifiers (`'user:admin'`). */
  allow?: readonly string[];
  /** Refused at once (403 in the adapters), without a store call: the same kinds of entries. Wins over `allow`. */
  deny?: readonly string[];
}

/** The most entries one list takes: lists live in every process's memory and are compiled on every setLists. */
export const MAX_LIST_ENTRIES = 1_000_000;

/** One list compiled: exact identifiers, and IP networks grouped by prefix length (a set lookup per length). */
class CompiledList {
  readonly ids = new Set<string>();
  /** IPv4: prefix length -> network addresses as unsigned 32-bit integers. */
  readonly v4 = new Map<number, Set<number>>();
  /** IPv6: prefix length -> network addresses as hex strings. */
  readonly v6 = new Map<number, Set<string>>();

  get empty(): boolean {
    return this.ids.size === 0 && this.v4.size === 0 && this.v6.size === 0;
  }

  get hasIps(): boolean {
    return this.v4.size > 0 || this.v6.size > 0;
  }

  /** Adds a network as config/list-entry.ts read it (IPv4-mapped IPv6 already turned into IPv4). */
  addNetwork(addr: ipaddr.IPv4 | ipaddr.IPv6, bits: number): void {
    if (addr.kind() === 'ipv4') {
      const set = this.v4.get(bits) ?? new Set<number>();
      set.add(maskV4(v4Int(addr.toByteArray()), bits));
      this.v4.set(bits, set);
    } else {
      const set = this.v6.get(bits) ?? new Set<string>();
      set.add(maskV6(addr.toByteArray(), bits));
      this.v6.set(bits, set);
    }
  }

  /** Whether an address (an IPv4 integer, or IPv6 bytes) lies in one of the networks. */
  hasV4(ip: number): boolean {
    for (const [bits, nets] of this.v4) if (nets.has(maskV4(ip, bits))) return true;
    return false;
  }

  hasV6(bytes: number[], within: number): boolean {
    // An address grouped to its /`within` network (an identifier `ip:2001:db8::/56`) matches only a range
    // that holds the whole group: a single address inside it says nothing about the rest.
    for (const [bits, nets] of this.v6) if (bits <= within && nets.has(maskV6(bytes, bits))) return true;
    return false;
  }
}

function v4Int(bytes: number[]): number {
  return ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
}

function maskV4(ip: number, bits: number): number {
  return bits === 0 ? 0 : (ip & (0xffffffff << (32 - bits))) >>> 0;
}

function maskV6(bytes: number[], bits: number): string {
  let hex = '';
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    const byte = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
    hex += byte.toString(16).padStart(2, '0');
  }
  return hex;
}

/** A client's address as the lists read it (four-part decimal IPv4, IPv6; brackets allowed). */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (ipaddr.IPv6.isValid(bare) && !bare.includes('%')) return ipaddr.IPv6.parse(bare);
  return undefined;
}

function compileList(value: unknown, option: string, kinds: ReadonlySet<string>): CompiledList {
  const list = new CompiledList();
  if (value === undefined) return list;
  if (!Array.isArray(value)) {
    throw new ConfigError(option, `must be an array of IP addresses, CIDR ranges and identifiers; got ${describeValue(value)}`);
  }
  if (value.length > MAX_LIST_ENTRIES) throw new ConfigError(option, `takes at most ${MAX_LIST_ENTRIES} entries; got ${value.length}`);
  value.forEach((entry, i) => {
    const read = parseListEntry(entry, `${option}[${i}]`, kinds);
    if ('id' in read) list.ids.add(read.id);
    else list.addNetwork(read.network, read.bits);
  });
  return list;
}

/** What a list match found: the list, and the identifier (or `ip:<address>`) it matched. */
export interface ListMatch {
  list: 'allow' | 'deny';
  identifier: string;
}

/** A client address parsed once for matching: IPv4 as an integer, IPv6 as bytes, with its group size. */
interface Parsed {
  v4?: number;
  v6?: number[];
  within: number;
}

const CANONICAL_IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** `1.2.3.4`, `2001:db8::1` or `2001:db8::/56` (a grouped identifier) as the lists match it; undefined if none. */
function parseClient(text: string): Parsed | undefined {
  const v4 = CANONICAL_IPV4.exec(text);
  if (v4 !== null) {
    const bytes = [Number(v4[1]), Number(v4[2]), Number(v4[3]), Number(v4[4])];
    return bytes.every((b) => b <= 255) ? { v4: v4Int(bytes), within: 32 } : undefined;
  }
  const slash = text.indexOf('/');
  const addr = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (addr === undefined) return undefined;
  if (addr.kind() === 'ipv4') return { v4: v4Int(addr.toByteArray()), within: 32 };
  const v6 = addr as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return { v4: v4Int(v6.toIPv4Address().toByteArray()), within: 32 };
  return { v6: v6.toByteArray(), within: slash === -1 ? 128 : Number(text.slice(slash + 1)) };
}

/** Allow and deny lists, compiled. */
export class Lists {
  /** Whether both lists are empty (a check then asks nothing). */
  readonly empty: boolean;
  /** Whether any rule is an IP rule (else the client address need not be parsed). */
  readonly hasIps: boolean;
  /** Whether the deny list has any rule. */
  readonly denies: boolean;

  private constructor(
    private readonly allow: CompiledList,
    private readonly deny: CompiledList,
    /** The identifier kinds an entry may name (config/list-entry.ts), kept for setLists. */
    private readonly kinds: ReadonlySet<string>,
  ) {
    this.empty = allow.empty && deny.empty;
    this.hasIps = allow.hasIps || deny.hasIps;
    this.denies = !deny.empty;
  }

  /**
   * Validates and compiles `{ allow, deny }`: a malformed entry, or an identifier of a kind not in `kinds`,
   * is a ConfigError naming `allow[i]` or `deny[i]`.
   */
  static compile(allow: unknown, deny: unknown, kinds: ReadonlySet<string>): Lists {
    return new Lists(compileList(allow, 'allow', kinds), compileList(deny, 'deny', kinds), kinds);
  }

  /** These lists with the ones `input` gives replaced (compiled first: an error changes nothing). */
  replace(input: ListsInput): Lists {
    const allow = Object.hasOwn(input, 'allow') ? compileList(input.allow, 'allow', this.kinds) : this.allow;
    const deny = Object.hasOwn(input, 'deny') ? compileList(input.deny, 'deny', this.kinds) : this.deny;
    return new Lists(allow, deny, this.kinds);
  }

  /** Validates setLists()'s argument: an object with `allow`, `deny` or both. */
  static input(value: unknown): ListsInput {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ConfigError('lists', `must be an object { allow?, deny? }; got ${describeValue(value)}`);
    }
    assertKnownOptions(value, ['allow', 'deny']);
    return ownOptions(value as ListsInput);
  }

  /**
   * The list a check's identifiers (and the client's exact address, when the adapter knows it) are on:
   * deny first, then allow; undefined when on neither.
   */
  match(ids: readonly string[], address: string | undefined, denyOnly = false): ListMatch | undefined {
    const denied = this.find(this.deny, 'deny', ids, address);
    return denied !== undefined || denyOnly ? denied : this.find(this.allow, 'allow', ids, address);
  }

  private find(list: CompiledList, name: 'allow' | 'deny', ids: readonly string[], address: string | undefined): ListMatch | undefined {
    if (list.empty) return undefined;
    if (list.ids.size > 0) for (const id of ids) if (list.ids.has(id)) return { list: name, identifier: id };
    if (!list.hasIps) return undefined;
    if (address !== undefined && this.onList(list, address)) return { list: name, identifier: `ip:${address}` };
    for (const id of ids) {
      // The client address was just asked; its own identifier (the same IPv4) need not be parsed again.
      if (!id.startsWith('ip:') || (address !== undefined && id.endsWith(address) && id.length === address.length + 3)) continue;
      if (this.onList(list, id.slice(3))) return { list: name, identifier: id };
    }
    return undefined;
  }

  private onList(list: CompiledList, address: string): boolean {
    const parsed = parseClient(address);
    if (parsed === undefined) return false;
    return parsed.v4 !== undefined ? list.hasV4(parsed.v4) : list.hasV6(parsed.v6!, parsed.within);
  }
}
