import { ConfigError, describeValue } from '../kernel/errors';
import { optionNames } from './option-table';

/** A rule as users write it. */
export interface RuleInput {
  /** Units admitted per window (a positive integer). */
  limit: number;
  /** Milliseconds (a positive integer) or a duration string such as '500ms', '1s', '1m', '1h', '1d'. */
  window: number | string;
  /** Scope the rule to identifiers of one kind: the part before the first ':' (e.g. 'user'). */
  for?: string;
  /** token-bucket: bucket capacity (default: limit). */
  burst?: number;
  /** sliding-window: buckets per window (default 10); the window must divide evenly. */
  precision?: number;
  /**
   * What the rule counts (docs/budgets.md): `'requests'` (the default) or any name ([A-Za-z0-9_-]{1,32}),
   * such as `'tokens'`. A check's cost names each unit (`{ requests: 1, tokens: 1200 }`) or is one number
   * for every rule.
   */
  unit?: string;
}

/** A rule after validation: every field resolved, nothing left to parse on the hot path. */
export interface Rule {
  readonly limit: number;
  readonly windowMs: number;
  readonly for: string | undefined;
  readonly burst: number;
  readonly precision: number;
  /** What it counts; undefined for the default unit, `'requests'` (unitOf). */
  readonly unit?: string;
}

/** The unit a rule counts when it names none. */
export const DEFAULT_UNIT = 'requests';

/** The unit a rule counts. */
export const unitOf = (rule: { readonly unit?: string | undefined }): string => rule.unit ?? DEFAULT_UNIT;

/** The units `rules` count, each once, in the order of their first rule. */
export function unitsOf(rules: readonly { readonly unit?: string | undefined }[]): string[] {
  return [...new Set(rules.map(unitOf))];
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+)(ms|s|m|h|d)$/;
/** An identifier kind: what a rule's `for`, `identifierKinds` and `lockout.scope` name. */
export const KIND = /^[A-Za-z0-9_-]{1,32}$/;
/** Largest duration accepted: a year. Keeps every timestamp sum far inside 2^53. */
export const MAX_DURATION_MS = 366 * 86_400_000;

/** Parses `window`/`duration` values: integer milliseconds or `^\d+(ms|s|m|h|d)$`. */
export function parseDuration(value: unknown, option: string): number {
  let ms: number | undefined;
  if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') {
    const match = DURATION.exec(value);
    if (match) ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  }
  if (ms === undefined || !Number.isSafeInteger(ms) || ms <= 0 || ms > MAX_DURATION_MS) {
    throw new ConfigError(
      option,
      `must be a positive whole number of milliseconds up to a year, or a string like '500ms', '10s', '1m', '1h', '1d'; got ${describeValue(value)}`,
    );
  }
  return ms;
}

function positiveInt(value: unknown, option: string, max = 1e9): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw new ConfigError(option, `must be a positive integer (at most ${max}); got ${describeValue(value)}`);
  }
  return value;
}

/** A rule's options, declared once (option-table.ts): each checked below, as it is resolved. */
const RULE_KEYS: readonly string[] = optionNames<RuleInput>({ limit: {}, window: {}, for: {}, burst: {}, precision: {}, unit: {} });
const RULE_ALIASES: Record<string, string> = {
  max: 'limit',
  points: 'limit',
  windowMs: 'window',
  duration: 'window',
  timeWindow: 'window',
};

/** Validates `limits` (one rule or an array) into resolved rules. */
export function resolveRules(input: unknown, option = 'limits'): Rule[] {
  const list = Array.isArray(input) ? input : input === undefined ? undefined : [input];
  if (!list || list.length === 0) {
    throw new ConfigError(option, `needs at least one rule, e.g. { limit: 100, window: '1m' }; got ${describeValue(input)}`);
  }
  if (list.length > 32) throw new ConfigError(option, `takes at most 32 rules; got ${list.length}`);
  return list.map((raw: unknown, i) => {
    const at = `${option}[${i}]`;
    if (typeof raw !== 'object' || raw === null) {
      throw new ConfigError(at, `must be an object like { limit: 100, window: '1m' }; got ${describeValue(raw)}`);
    }
    for (const key of Object.keys(raw)) {
      if (RULE_KEYS.includes(key)) continue;
      const alias = Object.hasOwn(RULE_ALIASES, key) ? RULE_ALIASES[key] : undefined;
      throw new ConfigError(
        `${at}.${key}`,
        alias ? `is not a Floodgate rule option: Floodgate calls it \`${alias}\`` : `is not a rule option (known: ${RULE_KEYS.join(', ')})`,
      );
    }
    const r = Object.assign(Object.create(null) as RuleInput, raw);
    const limit = positiveInt(r.limit, `${at}.limit`);
    const windowMs = parseDuration(r.window, `${at}.window`);
    if (r.for !== undefined && (typeof r.for !== 'string' || !KIND.test(r.for))) {
      throw new ConfigError(
        `${at}.for`,
        `must be an identifier kind such as 'ip' or 'user' ([A-Za-z0-9_-]{1,32}); got ${describeValue(r.for)}`,
      );
    }
    const burst = r.burst === undefined ? limit : positiveInt(r.burst, `${at}.burst`);
    const precision = r.precision === undefined ? 10 : positiveInt(r.precision, `${at}.precision`, 1000);
    if (r.unit !== undefined && (typeof r.unit !== 'string' || !KIND.test(r.unit))) {
      throw new ConfigError(`${at}.unit`, `must be a unit name such as 'tokens' ([A-Za-z0-9_-]{1,32}); got ${describeValue(r.unit)}`);
    }
    return { limit, windowMs, for: r.for, burst, precision, unit: r.unit === DEFAULT_UNIT ? undefined : r.unit };
  });
}

/** The label of a rule in messages and headers: '1s', '10m', '1500ms'. */
export function formatWindow(windowMs: number): string {
  for (const [unit, ms] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (windowMs % ms === 0) return `${windowMs / ms}${unit}`;
  }
  return `${windowMs}ms`;
}
