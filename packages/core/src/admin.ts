/**
 * @floodgate/core/admin: what the `floodgate` command line (@floodgate/cli) reads from Redis beside the
 * limiters' own calls: key names (docs/design.md, section 7), the registry of a prefix's limiters and the
 * denial sample (docs/cli.md), and the script a limiter's options make (`floodgate script`). Not for
 * applications; it follows the key layout of this version of core.
 *
 * @module @floodgate/core/admin
 */
export {
  encodeIdentifier,
  blockKey,
  keySlot,
  slotTag,
  indexKey,
  colocatedIndexKey,
  registryKey,
  topKey,
  overridesKey,
  overridesVersionKey,
  keyScheme,
  SLOTS,
  DEFAULT_PREFIX,
} from './scripts/keys';
export { parseDuration, formatWindow } from './config/rules';
export { REGISTRY_VERSION, TOP_KEEP, type LimiterDescription } from './engine/operator';
export { LOCKOUT_REASON } from './scripts/lockout';
export { closestName } from './kernel/closest-name';
export { identifierMistake, ANY_IPV6_KEYING, type IdentifierMistake, type Ipv6Keying } from './config/list-entry';
export { limiterScript, type LimiterScriptKind, type LimiterScriptOptions } from './engine/limiter-script';
import { ALGORITHMS, type AlgorithmName } from './scripts/algorithms';

/** The state key tag (with its layout version) of an algorithm by name, e.g. 'fw2'; undefined for an unknown name. */
export function algorithmTag(name: string): string | undefined {
  return Object.hasOwn(ALGORITHMS, name) ? ALGORITHMS[name as AlgorithmName].tag : undefined;
}
