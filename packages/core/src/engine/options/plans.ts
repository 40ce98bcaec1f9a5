import { BUILT_IN_KINDS } from '../../config/list-entry';
import { KIND, resolveRules, unitsOf, type Rule } from '../../config/rules';
import { ConfigError, describeValue } from '../../kernel/errors';
import type { Algorithm } from '../../scripts/types';

/*
 * `limits` as plans (docs/plans.md): one unnamed rule set, or named ones a check picks from; each plan's
 * rules validated for the algorithm. And the identifier kinds a limiter knows, which its plans' rules name.
 */

/** A named rule set of `limits: { free: [...], pro: [...] }`. */
export interface Plan {
  readonly name: string;
  readonly rules: readonly Rule[];
}

const RULE_OPTION_ALGORITHM = { burst: 'token-bucket', precision: 'sliding-window' } as const;

/** A rule option the algorithm ignores would be a silent no-op: `precision` on fixed-window is a mistake. */
function assertRuleOptions(limits: unknown, algorithm: Algorithm, path: string): void {
  const list: unknown[] = Array.isArray(limits) ? limits : [limits];
  list.forEach((rule, i) => {
    for (const option of ['burst', 'precision'] as const) {
      if (typeof rule === 'object' && rule !== null && Object.hasOwn(rule, option) && !algorithm.ruleOptions.includes(option)) {
        throw new ConfigError(
          `${path}[${i}].${option}`,
          `applies only to algorithm '${RULE_OPTION_ALGORITHM[option]}'; this limiter's algorithm is '${algorithm.name}'`,
        );
      }
    }
  });
}

const PLAN_NAME = /^[A-Za-z0-9_.-]{1,48}$/;
const MAX_PLANS = 64;

/** Whether `limits` names plans: an object (not a rule, not a list) whose every value is a rule or a list. */
function namesPlans(limits: unknown): limits is Record<string, unknown> {
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) return false;
  const values = Object.values(limits);
  return (
    values.length > 0 && !Object.hasOwn(limits, 'limit') && values.every((v) => Array.isArray(v) || (typeof v === 'object' && v !== null))
  );
}

/** One rule set (a plan's, or an override's: engine/overrides.ts), validated for the algorithm; errors name `path`. */
export function resolveRuleSet(value: unknown, algorithm: Algorithm, path: string): Rule[] {
  const rules = resolveRules(value, path);
  assertRuleOptions(value, algorithm, path);
  rules.forEach((rule, i) => algorithm.validate?.(rule, `${path}[${i}]`));
  return rules;
}

/** `limits` as plans: named ones, or a single unnamed one. Each plan's rules are validated for the algorithm. */
export function resolvePlans(limits: unknown, algorithm: Algorithm): Plan[] {
  const named = namesPlans(limits);
  const entries: [string, unknown][] = named ? Object.entries(limits) : [['', limits]];
  if (entries.length > MAX_PLANS) throw new ConfigError('limits', `names at most ${MAX_PLANS} plans; got ${entries.length}`);
  const plans = entries.map(([name, value]) => {
    if (named && !PLAN_NAME.test(name)) {
      throw new ConfigError(`limits.${name}`, `is not a plan name: plan names match [A-Za-z0-9_.-]{1,48}`);
    }
    return { name, rules: resolveRuleSet(value, algorithm, named ? `limits.${name}` : 'limits') };
  });
  // Sliding log keeps one log of timestamps per identifier for every rule of every plan: one unit per entry.
  const units = unitsOf(plans.flatMap((p) => p.rules));
  if (algorithm.name === 'sliding-log' && units.length > 1) {
    throw new ConfigError(
      'limits',
      `algorithm 'sliding-log' counts one unit: it keeps one log of every rule's entries per identifier; these rules count ${units.join(', ')}. Use another algorithm, or a limiter per unit`,
    );
  }
  return plans;
}

/** The kinds a list entry or `lockout.scope` may name: the built-in ones, every rule's `for`, and `identifierKinds`. */
export function listKinds(plans: readonly Plan[], declared: unknown): ReadonlySet<string> {
  const kinds = new Set(BUILT_IN_KINDS);
  for (const plan of plans) for (const rule of plan.rules) if (rule.for !== undefined) kinds.add(rule.for);
  if (declared === undefined) return kinds;
  if (!Array.isArray(declared)) {
    throw new ConfigError('identifierKinds', `must be an array of identifier kinds such as ['tenant']; got ${describeValue(declared)}`);
  }
  declared.forEach((kind: unknown, i) => {
    if (typeof kind !== 'string' || !KIND.test(kind)) {
      throw new ConfigError(`identifierKinds[${i}]`, `must be an identifier kind ([A-Za-z0-9_-]{1,32}); got ${describeValue(kind)}`);
    }
    kinds.add(kind);
  });
  return kinds;
}
