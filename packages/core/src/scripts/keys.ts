import { createHash } from 'node:crypto';

/** The identifier that stands for a client whose address is unknown (see `unidentified`); no IP normalises to it. */
export const UNKNOWN_IP = 'ip:unknown';

/** The key prefix of a limiter without `prefix`. */
export const DEFAULT_PREFIX = 'floodgate';

/** Identifiers kept verbatim in keys; everything else is hashed. `#` is not in this set. */
const RAW_IDENTIFIER = /^[A-Za-z0-9._:@/-]{1,64}$/;

/**
 * Identifier -> the part of a key inside the hash tag (docs/design.md, section 7 and invariant 5).
 *
 * Raw when it is short and plain, else `#` + base64url(sha256) cut to 22 chars (132 bits). The raw set has
 * no `#`, `{` or `}`, so the mapping is injective and no input can leave its hash tag. Hashing the UTF-16
 * code units (not UTF-8) keeps strings with lone surrogates apart: UTF-8 would turn them all into U+FFFD.
 */
export function encodeIdentifier(identifier: string): string {
  if (RAW_IDENTIFIER.test(identifier)) return identifier;
  return `#${createHash('sha256').update(identifier, 'utf16le').digest('base64url').slice(0, 22)}`;
}

/** `<prefix>:<name>:<algorithm tag + layout version>:{<enc>}` */
export function stateKey(prefix: string, name: string, tag: string, enc: string): string {
  return `${prefix}:${name}:${tag}:{${enc}}`;
}

/** `<prefix>:!b:{<enc>}`: shared by every limiter with this prefix; no name can contain `!`. */
export function blockKey(prefix: string, enc: string): string {
  return `${prefix}:!b:{${enc}}`;
}

/**
 * Whether a key is a block key (of either scheme) or a key of the prefix's block index: no prefix or name
 * can contain `!`. The memory store keeps these apart from state keys, so no flood of identifiers evicts them.
 */
export function isBlockKey(key: string): boolean {
  return key.includes(':!b:') || key.includes(':!i:');
}

/** CRC16/XMODEM, as Redis Cluster uses for key slots (cluster spec, "Keys distribution model"). */
function crc16(s: string): number {
  // Keys are ASCII (prefix, name and encoded identifier all are): their UTF-16 code units are their bytes,
  // read without encoding the string. Anything else is CRC'd over its UTF-8 bytes, as Redis does.
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return crc16Bytes(Buffer.from(s));
  let crc = 0;
  for (let i = 0; i < s.length; i++) {
    crc ^= s.charCodeAt(i) << 8;
    for (let k = 0; k < 8; k++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function crc16Bytes(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let k = 0; k < 8; k++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The slot of a key: of its first non-empty {hash tag} when it has one, else of the whole key. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  const tagged = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(tagged) % 16384;
}

/** Redis Cluster's number of hash slots. */
export const SLOTS = 16384;

let slotTags: string[] | undefined;
/**
 * A short hash tag (1 to 4 characters of [0-9a-z]) whose slot is `slot`: the first base-36 number that
 * maps there. The table is built once per process, on first use (about 10 ms).
 */
export function slotTag(slot: number): string {
  if (slotTags === undefined) {
    const table = new Array<string>(SLOTS);
    let left = SLOTS;
    for (let n = 0; left > 0; n++) {
      const tag = n.toString(36);
      const s = crc16(tag) % SLOTS;
      if (table[s] === undefined) {
        table[s] = tag;
        left--;
      }
    }
    slotTags = table;
  }
  return slotTags[slot]!;
}

/**
 * The block index of a prefix (docs/design.md, section 7): a sorted set per hash slot, of the block keys in
 * force in that slot scored by their end (ms since the epoch), `<prefix>:!i:{<tag>}` with `tag` a short
 * hash tag of the slot (slotTag). The scripts that write or delete a block key keep it, in the same call:
 * its entry exists exactly while the block does.
 */
export function indexKey(prefix: string, slot: number): string {
  return `${prefix}:!i:{${slotTag(slot)}}`;
}

/** A colocated prefix's one block index, in the prefix's slot (`cluster: { colocate: true }`). */
export function colocatedIndexKey(prefix: string): string {
  return `${prefix}:!i:{${prefix}}`;
}

/** The registry of a prefix's limiters (docs/cli.md): a hash, limiter name -> its description (JSON). */
export function registryKey(prefix: string): string {
  return `${prefix}:!m:{${prefix}}`;
}

/**
 * A limiter's overrides (docs/overrides.md): a hash, identifier -> its override (JSON), and beside it, in the
 * same slot, the version every change increments. No limiter name contains `!`.
 */
export function overridesKey(prefix: string, name: string): string {
  return `${prefix}:!o:{${prefix}}:${name}`;
}

/** The version of a limiter's overrides (see overridesKey): a counter. */
export function overridesVersionKey(prefix: string, name: string): string {
  return `${prefix}:!ov:{${prefix}}:${name}`;
}

/** The denial sample of one minute (ms since the epoch / 60000): a sorted set, identifier -> denials. */
export function topKey(prefix: string, minute: number): string {
  return `${prefix}:!t:{${prefix}}:${minute}`;
}

/** The kind of an identifier: the part before the first ':' ('' when there is none). */
export function identifierKind(identifier: string): string {
  const colon = identifier.indexOf(':');
  return colon === -1 ? '' : identifier.slice(0, colon);
}

/** How a limiter names its keys: per identifier in its own slot (default), or all in one (colocate). */
export interface KeyScheme {
  state(enc: string): string;
  block(enc: string): string;
  /** The identifier's lockout state (the `lockout` option): `<prefix>:<name>:lo:{<enc>}`, beside its state key. */
  lockout(enc: string): string;
  /** The block index key in the slot of the identifier's block key (indexKey). */
  index(enc: string): string;
}

/*
 * `cluster: { colocate: true }` puts every key of every limiter with this prefix in one hash slot, the
 * prefix's: `<prefix>:<name>:<tag>:{<prefix>}:<enc>` and `<prefix>:!b:{<prefix>}:<enc>`. Per prefix, not
 * per name, because a block key is shared by all limiters of a prefix and must sit in their slot. The
 * first {...} is the hash tag and `enc` holds no braces, so the keys stay injective and inside their tag.
 */
export function keyScheme(prefix: string, name: string, tag: string, colocate: boolean): KeyScheme {
  if (!colocate) {
    return {
      state: (enc) => stateKey(prefix, name, tag, enc),
      block: (enc) => blockKey(prefix, enc),
      lockout: (enc) => `${prefix}:${name}:lo:{${enc}}`,
      index: (enc) => indexKey(prefix, keySlot(enc)),
    };
  }
  return {
    state: (enc) => `${prefix}:${name}:${tag}:{${prefix}}:${enc}`,
    block: (enc) => `${prefix}:!b:{${prefix}}:${enc}`,
    lockout: (enc) => `${prefix}:${name}:lo:{${prefix}}:${enc}`,
    index: () => colocatedIndexKey(prefix),
  };
}
