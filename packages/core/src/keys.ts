import { createHash } from 'node:crypto';

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

/** Whether a key is a block key (of either scheme): no prefix or name can contain `!`. */
export function isBlockKey(key: string): boolean {
  return key.includes(':!b:');
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
    };
  }
  return {
    state: (enc) => `${prefix}:${name}:${tag}:{${prefix}}:${enc}`,
    block: (enc) => `${prefix}:!b:{${prefix}}:${enc}`,
    lockout: (enc) => `${prefix}:${name}:lo:{${prefix}}:${enc}`,
  };
}
