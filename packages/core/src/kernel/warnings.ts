import { ConfigError, describeValue } from './errors';
import { shared } from './state';
import type { Logger } from './logger';

/** Every warning Floodgate's adapters can give, each shown at most once per process. */
export const WARNING_NAMES = [
  /** X-Forwarded-For arrived but the framework does not trust proxies: every client behind the proxy shares one IP. */
  'forwarded-header-untrusted',
  /** The framework trusts every proxy hop: any client can pick its own IP with X-Forwarded-For. */
  'trust-proxy-all',
  /** With `unidentified: 'allow'`, a request had no usable IP and nothing else identified it: it was not limited. */
  'no-identifier',
  /** A request's client address was missing or not an IP: it was limited as `ip:unknown` (or as `unidentified` says). */
  'unknown-ip',
  /** identify() returned nothing usable for a request: the default identifiers were used. */
  'identify-empty',
  /** A refund (skipSuccessfulRequests, skipFailedRequests) could not be made: those units stay counted. */
  'refund-failed',
  /** A request's `settle` threw, answered an invalid cost, or could not reach the store: its estimate stays counted. */
  'settle-failed',
] as const;

export type WarningName = (typeof WARNING_NAMES)[number];

/** `warnings: false` silences all; `{ 'trust-proxy-all': false }` silences one. */
export type WarningsOption = boolean | Partial<Record<WarningName, boolean>>;

const shown = shared('warningsShown', () => new Set<WarningName>());

/** The set of enabled warnings, validated once at construction. */
export function resolveWarnings(value: unknown): ReadonlySet<WarningName> {
  if (value === undefined || value === true) return new Set(WARNING_NAMES);
  if (value === false) return new Set();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError('warnings', `must be true, false or an object like { 'trust-proxy-all': false }; got ${describeValue(value)}`);
  }
  const enabled = new Set<WarningName>(WARNING_NAMES);
  for (const [name, on] of Object.entries(value)) {
    if (!(WARNING_NAMES as readonly string[]).includes(name)) {
      throw new ConfigError(`warnings.${name}`, `is not a Floodgate warning (known: ${WARNING_NAMES.join(', ')})`);
    }
    if (typeof on !== 'boolean') throw new ConfigError(`warnings.${name}`, `must be true or false; got ${describeValue(on)}`);
    if (!on) enabled.delete(name as WarningName);
  }
  return enabled;
}

/** Logs a named warning the first time it happens in this process, if `enabled` has it. */
export function warnOnce(logger: Logger, enabled: ReadonlySet<WarningName>, name: WarningName, message: string): void {
  if (shown.has(name) || !enabled.has(name)) return;
  shown.add(name);
  logger.warn(`floodgate [${name}]: ${message} (turn this off with warnings: { '${name}': false })`);
}

/** Whether a warning was already shown (adapters use it to skip per-request checks). */
export function warned(name: WarningName): boolean {
  return shown.has(name);
}

/** Forgets which warnings were shown: for tests. */
export function resetWarnings(): void {
  shown.clear();
}
