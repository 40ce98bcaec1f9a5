import type { RuleInput } from '../config/rules';

/*
 * What an override is (docs/overrides.md): what set() takes, what get() and list() answer, and the JSON the
 * overrides' hash holds per identifier.
 */

/** What an override gives its identifier: one of the limiter's plans, or rules of its own (as `limits` takes them). */
export type OverrideInput = { plan: string; limits?: never } | { limits: RuleInput | RuleInput[]; plan?: never };

export interface OverrideSetOptions {
  /** How long it applies: ms or a duration string ('1h'), up to a year. Default: until deleted. */
  ttl?: number | string;
}

/** An override as stored: its plan or its rules (window in ms), and when it ends (ms since the epoch). */
export interface Override {
  identifier: string;
  plan?: string;
  limits?: RuleInput[];
  expiresAt?: number;
  /**
   * Present when this limiter does not apply the override, and why: a plan it does not have (written before
   * the plan was removed, or by another version), or rules it cannot run. Its checks of the identifier run
   * as without an override; delete it, or set it again.
   */
  ignored?: string;
}

/** limiter.overrides: set, read and delete the limiter's overrides (in Redis, or in process without `redis`). */
export interface LimiterOverrides {
  /** Whether the limiter applies overrides (the `overrides` option). The methods reject with a ConfigError when not. */
  readonly enabled: boolean;
  /** Sets (or replaces) the identifier's override; this process applies it at once, the others within `refreshMs`. */
  set(identifier: string, override: OverrideInput, options?: OverrideSetOptions): Promise<void>;
  /** The identifier's override in force, read from the store (not the process's copy); `ignored` says when this limiter does not apply it. */
  get(identifier: string): Promise<Override | undefined>;
  /** Every override in force, by identifier; `ignored` on those this limiter does not apply. */
  list(): Promise<Override[]>;
  /** Removes the identifier's override: true when it had one in force. */
  delete(identifier: string): Promise<boolean>;
  /** Reads the store now instead of at the next refresh (the next check applies what it found). */
  refresh(): Promise<void>;
}

/** An override as the hash holds it: without its identifier (the field) and without `ignored` (this limiter's reading). */
export type Stored = Omit<Override, 'identifier' | 'ignored'>;

/** A stored override's JSON, or undefined when it is not one. */
export function parseStored(json: string): Stored | undefined {
  let o: unknown;
  try {
    o = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const { plan, limits, expiresAt } = o as Record<string, unknown>;
  if (expiresAt !== undefined && typeof expiresAt !== 'number') return undefined;
  if (typeof plan === 'string' && limits === undefined) return { plan, ...(expiresAt === undefined ? {} : { expiresAt }) };
  if (Array.isArray(limits) && plan === undefined) {
    return { limits: limits as RuleInput[], ...(expiresAt === undefined ? {} : { expiresAt }) };
  }
  return undefined;
}
