import { ConfigError, describeValue } from '../../kernel/errors';
import { KIND, parseDuration } from '../../config/rules';
import { checkInteger, nested } from '../../config/validate';
import { optionNames } from '../../config/option-table';
import type { LockoutSpec } from '../../scripts/lockout';
import type { Plan } from './plans';

/* `lockout` (docs/lockouts.md): escalating blocks after repeated denials, and the kinds they may lock. */

export interface LockoutOptions {
  /** Denials (within `within`) that lock an identifier out: a positive integer. */
  after: number;
  /** The window the denials are counted in: ms or a duration string. */
  within: number | string;
  /** The first lockout's length: ms or a duration string. */
  duration: number | string;
  /** Each further lockout lasts this many times the one before (1 to 100). Default 1: no escalation. */
  backoff?: number;
  /**
   * The longest lockout (default: `duration` without backoff, else 24 hours or `duration` if longer). The
   * escalation is forgotten once an identifier has gone this long past its last lockout.
   */
  maxDuration?: number | string;
  /**
   * Required: the identifier kinds a lockout may lock (`'ip'`, or `['ip', 'login']`); identifiers of other
   * kinds are limited by their rules but never locked out. Never name a kind any client can claim without
   * proving it owns it (an account name at a login): whoever names it would lock its owner out. For
   * logins, lock the client and the (client, account) pair: `['ip', 'login']` with identifiers
   * `ip:<address>` and `login:<ip identifier>|<account>` (docs/lockouts.md, "What a lockout locks").
   */
  scope: string | readonly string[];
}

const LOCKOUT_OPTION_KEYS = optionNames<LockoutOptions>({
  after: {},
  within: {},
  duration: {},
  backoff: {},
  maxDuration: {},
  scope: {},
});

const DAY_MS = 86_400_000;

/** At most this many kinds in `lockout.scope` (as many as a limiter has rules). */
const MAX_SCOPE_KINDS = 32;

/**
 * `lockout.scope`: the kinds a lockout may lock, each a kind the limiter knows (`known`: built in, a rule's
 * `for`, or `identifierKinds`) and one some rule of some plan applies to (a kind no rule applies to is never
 * denied by its own rules, so never locked: a typo). Required, because a lockout of everything a check
 * names hands anyone who can name an account a way to lock its owner out (docs/security.md, "Lockouts as a
 * lever against someone else").
 */
function resolveLockoutScope(value: unknown, plans: readonly Plan[], known: ReadonlySet<string>): readonly string[] {
  if (value === undefined) {
    throw new ConfigError(
      'lockout.scope',
      "is required: the identifier kinds a lockout may lock, such as ['ip'], or for logins ['ip', 'login'] with " +
        '`login:<ip identifier>|<account>` identifiers (docs/lockouts.md). A kind any client can name without owning it ' +
        "(an account at a login, such as 'user') lets whoever names it lock its owner out: name one only if that is what you want",
    );
  }
  const list: unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  if (list.length === 0 || list.length > MAX_SCOPE_KINDS) {
    throw new ConfigError(
      'lockout.scope',
      `must be an identifier kind or a list of 1 to ${MAX_SCOPE_KINDS} of them, such as ['ip', 'login']; got ${describeValue(value)}`,
    );
  }
  const rules = plans.flatMap((p) => p.rules);
  const anyKind = rules.some((r) => r.for === undefined);
  const ruleKinds = [...new Set(rules.map((r) => r.for))];
  for (const kind of list) {
    if (typeof kind !== 'string' || !KIND.test(kind)) {
      throw new ConfigError(
        'lockout.scope',
        `must list identifier kinds such as 'ip' or 'login' ([A-Za-z0-9_-]{1,32}, the part of an identifier before its first ':'); got ${describeValue(kind)}`,
      );
    }
    if (!known.has(kind)) {
      throw new ConfigError(
        'lockout.scope',
        `names '${kind}', a kind no identifier of this limiter has (known kinds: ${[...known].join(', ')}; declare others in \`identifierKinds\`, or scope a rule to them with \`for\`)`,
      );
    }
    if (!anyKind && !ruleKinds.includes(kind)) {
      throw new ConfigError(
        'lockout.scope',
        `names '${kind}', a kind no rule applies to (the rules are for ${ruleKinds.map((k) => `'${k}'`).join(', ')}): its identifiers are never denied by their own rules, so never locked out`,
      );
    }
  }
  return [...new Set(list as string[])];
}

export function resolveLockout(value: unknown, plans: readonly Plan[], known: ReadonlySet<string>): LockoutSpec | undefined {
  if (value === undefined) return undefined;
  const o = nested<LockoutOptions>(value, 'lockout', LOCKOUT_OPTION_KEYS, "{ after: 5, within: '15m', duration: '1h', scope: ['ip'] }");
  const after = checkInteger(o.after, 'lockout.after', 1, 1_000_000);
  const withinMs = parseDuration(o.within, 'lockout.within');
  const durationMs = parseDuration(o.duration, 'lockout.duration');
  const backoff = o.backoff ?? 1;
  if (typeof backoff !== 'number' || !Number.isFinite(backoff) || backoff < 1 || backoff > 100) {
    throw new ConfigError('lockout.backoff', `must be a number from 1 to 100; got ${describeValue(backoff)}`);
  }
  const fallback = backoff === 1 ? durationMs : Math.max(DAY_MS, durationMs);
  const maxDurationMs = o.maxDuration === undefined ? fallback : parseDuration(o.maxDuration, 'lockout.maxDuration');
  if (maxDurationMs < durationMs) {
    throw new ConfigError('lockout.maxDuration', `must be at least lockout.duration (${durationMs} ms); got ${maxDurationMs} ms`);
  }
  return { after, withinMs, durationMs, backoff, maxDurationMs, scope: resolveLockoutScope(o.scope, plans, known) };
}
