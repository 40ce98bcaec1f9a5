import { ArgumentError, describeValue } from '../kernel/errors';
import { shared } from '../kernel/state';
import { ANY_IPV6_KEYING, identifierMistake, type Ipv6Keying } from '../config/list-entry';

/*
 * The identifiers an override may name (docs/overrides.md): what set() refuses, and the IPv6 keyings of the
 * adapters that check a limiter, which say in what form an `ip:` identifier reaches its checks.
 */

/** Longest identifier an override takes (the hash field is the identifier itself). */
export const MAX_OVERRIDE_IDENTIFIER = 512;

/** A control character, a lone surrogate or a line separator: never in an identifier an override names. */
// eslint-disable-next-line no-control-regex
const HOSTILE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/*
 * How the adapters checking a limiter key IPv6 clients (`ipv6Subnet`), by `<prefix>:<name>` (limiters of one
 * prefix and name share their keys, hence their identifiers): what set() accepts of an `ip:` identifier.
 * A limiter no adapter checks (core alone, the command line's) accepts every form an adapter may hold.
 */
const keyings = shared('ipv6Keyings', () => new Map<string, Set<Ipv6Keying>>());

/** An adapter checks `limiter` with this `ipv6Subnet` (http/http-limiter.ts). */
export function noteIpv6Keying(limiter: { prefix?: unknown; name?: unknown }, keying: Ipv6Keying): void {
  if (typeof limiter.prefix !== 'string' || typeof limiter.name !== 'string') return;
  const id = `${limiter.prefix}:${limiter.name}`;
  const set = keyings.get(id) ?? new Set();
  keyings.set(id, set.add(keying));
}

/**
 * An identifier set() may give an override: checkOverrideIdentifier's, and none that names an address in a
 * form no check of this limiter holds (config/list-entry.ts): a bare address, another spelling, a range,
 * an IPv6 address the adapters key by its network. Refused with the identifier meant; get() and delete()
 * take any, so that an override stored before stays reachable.
 */
export function checkSettable(identifier: unknown, prefix: string, name: string): string {
  const id = checkOverrideIdentifier(identifier);
  assertCheckable(id, prefix, name, "an override's identifier", 'apply it');
  return id;
}

/**
 * Refuses an identifier an operator gave (an override's, a block's, a reset's) that names a client's address
 * in a form no check of this limiter holds, with the identifier meant: `what` names it, `effect` says what
 * no check would do (config/list-entry.ts, identifierMistake).
 */
export function assertCheckable(id: string, prefix: string, name: string, what: string, effect: string): void {
  const mistake = identifierMistake(id, [...(keyings.get(`${prefix}:${name}`) ?? ANY_IPV6_KEYING)]);
  if (mistake === undefined) return;
  const meant = mistake.meant === undefined ? '' : `: did you mean ${JSON.stringify(mistake.meant)}?`;
  throw new ArgumentError(`${what} ${describeValue(id)} ${mistake.why}, so no check would ${effect}${meant}`);
}

/** An identifier an override may name: a string of 1 to 512 characters without control characters. */
export function checkOverrideIdentifier(identifier: unknown): string {
  if (typeof identifier !== 'string' || identifier.length === 0 || identifier.length > MAX_OVERRIDE_IDENTIFIER) {
    throw new ArgumentError(
      `an override's identifier must be a string of 1 to ${MAX_OVERRIDE_IDENTIFIER} characters; got ${describeValue(identifier)}`,
    );
  }
  if (HOSTILE.test(identifier)) {
    throw new ArgumentError(`an override's identifier must not hold control characters; got ${JSON.stringify(identifier)}`);
  }
  return identifier;
}
