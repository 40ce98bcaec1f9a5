import { ConfigError, describeValue } from '../kernel/errors';
import type { HeaderList } from './headers';

/** Every header a limiter may write, any of which `omitHeaders` can leave out. */
export const OMITTABLE_HEADERS = [
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
] as const;
/** The AI API dialect's headers (`headers: 'openai'`), one of each per unit: `x-ratelimit-remaining-tokens`. */
export type UnitHeader = `x-ratelimit-${'limit' | 'remaining' | 'reset'}-${string}`;
export type OmittableHeader = (typeof OMITTABLE_HEADERS)[number] | UnitHeader;

const KNOWN = new Map<string, string>(OMITTABLE_HEADERS.map((h) => [h.toLowerCase(), h]));
/** A unit name is [A-Za-z0-9_-]{1,32} (config/rules.ts): every character is a header-name token character (RFC 9110 §5.6.2). */
const UNIT_HEADER = /^x-ratelimit-(?:limit|remaining|reset)-[a-z0-9_-]{1,32}$/;

/** `omitHeaders` as a set of lower-case names, or undefined when nothing is left out (the common case: no work per request). */
export function resolveOmitHeaders(value: unknown): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new ConfigError('omitHeaders', `must be an array of header names; got ${describeValue(value)}`);
  const names = new Set<string>();
  for (const name of value) {
    if (typeof name !== 'string' || !(KNOWN.has(name.toLowerCase()) || UNIT_HEADER.test(name.toLowerCase()))) {
      throw new ConfigError(
        'omitHeaders',
        `${describeValue(name)} is not a header Floodgate writes (${OMITTABLE_HEADERS.join(', ')}, x-ratelimit-{limit,remaining,reset}-<unit>)`,
      );
    }
    names.add(name.toLowerCase());
  }
  return names.size === 0 ? undefined : names;
}

/**
 * The AI dialect's headers in `omitHeaders` must be ones this limiter can write: `headers` includes 'openai'
 * and a rule counts the unit. A misspelt unit (`x-ratelimit-limit-tokns`) would otherwise leave out nothing.
 */
export function checkOmittedUnits(omitted: ReadonlySet<string> | undefined, openai: boolean, units: ReadonlySet<string>): void {
  for (const name of omitted ?? []) {
    if (!UNIT_HEADER.test(name)) continue;
    if (!openai) throw new ConfigError('omitHeaders', `${name} is a header of headers: 'openai', which this limiter does not send`);
    const unit = name.replace(/^x-ratelimit-(?:limit|remaining|reset)-/, '');
    const known = [...units].find((u) => u.toLowerCase() === unit);
    if (known === undefined) throw new ConfigError('omitHeaders', `${name} names a unit no rule counts (units: ${[...units].join(', ')})`);
  }
}

/** An outcome without the omitted headers (a new object: outcomes may be shared and frozen). */
export function omitHeaders<T extends { set: HeaderList; append: HeaderList }>(outcome: T, omit: ReadonlySet<string>): T {
  const keep = ([name]: [string, string]): boolean => !omit.has(name.toLowerCase());
  return { ...outcome, set: outcome.set.filter(keep), append: outcome.append.filter(keep) };
}

/**
 * The rate-limit headers a response carries now, by name (every limiter's that ran on it). For a framework
 * whose default error handling replaces a response's headers with the error's own (Koa's ctx.onerror keeps
 * only `err.headers`): a denial thrown there carries them, so they are not lost.
 */
export function rateLimitHeadersOn(res: {
  getHeader(name: string): number | string | string[] | undefined;
  getHeaderNames?(): string[];
}): Record<string, string | string[]> {
  const found: Record<string, string | string[]> = {};
  const units = res.getHeaderNames?.().filter((n) => UNIT_HEADER.test(n)) ?? [];
  for (const name of [...OMITTABLE_HEADERS, ...units]) {
    const value = res.getHeader(name);
    if (value !== undefined) found[name] = typeof value === 'number' ? String(value) : value;
  }
  return found;
}
