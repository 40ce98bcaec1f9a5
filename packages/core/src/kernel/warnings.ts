import { ConfigError, describeValue } from './errors';
import { shared } from './state';
import type { Logger } from './logger';

/**
 * Every warning Floodgate's adapters can give. Each is shown at most once per process, except the ones of
 * RECURRING: those are logged at most once per RECURRING_WARNING_MS, with how many happened since.
 */
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
  /**
   * A request's `settle` threw, answered no valid cost (nothing, a negative number, a unit left out), or
   * could not reach the store: its estimate stays counted. Recurring: each one is also a limiter event.
   */
  'settle-failed',
] as const;

export type WarningName = (typeof WARNING_NAMES)[number];

/** `warnings: false` silences all; `{ 'trust-proxy-all': false }` silences one. */
export type WarningsOption = boolean | Partial<Record<WarningName, boolean>>;

/**
 * Warnings an operator must be able to count, not learn of once: each occurrence costs a client its
 * estimate. They are logged at most once per RECURRING_WARNING_MS per process, each line saying how many
 * happened since the last one; every occurrence is also an event of its limiter (docs/operating.md).
 */
const RECURRING: ReadonlySet<WarningName> = new Set<WarningName>(['settle-failed']);

/** How often a recurring warning may be logged: once a minute. */
export const RECURRING_WARNING_MS = 60_000;

const shown = shared('warningsShown', () => new Set<WarningName>());
/** Per recurring warning: when it was last logged (performance.now()), and how many times it happened since. */
const lastLogged = shared('warningsRecurring', () => new Map<WarningName, { at: number; since: number }>());

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

/**
 * Logs a named warning, if `enabled` has it: the first time it happens in this process, or for a recurring
 * one, when none was logged in the last RECURRING_WARNING_MS (`now`: performance.now(), given by tests).
 */
export function logWarning(
  logger: Logger,
  enabled: ReadonlySet<WarningName>,
  name: WarningName,
  message: string,
  now: number = performance.now(),
): void {
  if (!enabled.has(name)) return;
  const off = `turn this off with warnings: { '${name}': false }`;
  if (!RECURRING.has(name)) {
    if (shown.has(name)) return;
    shown.add(name);
    logger.warn(`floodgate [${name}]: ${message} (${off})`);
    return;
  }
  const last = lastLogged.get(name);
  if (last !== undefined && now - last.at < RECURRING_WARNING_MS) {
    last.since++;
    return;
  }
  lastLogged.set(name, { at: now, since: 0 });
  shown.add(name);
  const count =
    last === undefined
      ? 'logged at most once a minute, with the count since'
      : `${last.since + 1} in the ${Math.round((now - last.at) / 1000)} s since the last such warning; logged at most once a minute`;
  logger.warn(`floodgate [${name}]: ${message} (${count}; ${off})`);
}

/** Whether a warning was already shown (adapters use it to skip per-request checks). */
export function warned(name: WarningName): boolean {
  return shown.has(name);
}

/** Forgets which warnings were shown, and when the recurring ones were last: for tests. */
export function resetWarnings(): void {
  shown.clear();
  lastLogged.clear();
}
