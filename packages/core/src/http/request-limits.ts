import { ConfigError, describeValue } from '../kernel/errors';
import { isThenable } from '../kernel/thenable';
import type { RuleInput } from '../config/rules';
import { ruleSetPlan, type FloodgateLimiter, type RuleSetHandle } from '../engine/limiter';
import type { MaybePromise } from './option-types';

/*
 * A limit that is a function of the request (docs/overrides.md, "A limit per request"): the rule's other
 * fields are fixed, its `limit` is what `limit(req)` answers. A script is generated per rule set, so each
 * distinct answer is a rule set the limiter compiles at its first use and keeps (engine/rule-sets.ts: at
 * most 256 per limiter, shared with the overrides' limits); an answer past that bound, or one that is not
 * a positive integer, is an error the framework's error handling gets, never a silent default.
 */

/** A rule as the HTTP layer takes it: its `limit` may be a function of the request. */
export interface HttpRuleInput<Req> extends Omit<RuleInput, 'limit'> {
  /** Units admitted per window: a positive integer, or a function of the request giving one (may be async). */
  limit: number | ((req: Req) => MaybePromise<number>);
}

type LimitOf<Req> = (req: Req) => MaybePromise<number>;

/** The limits with functions in them, resolved once at construction. */
export interface RequestLimits<Req> {
  /** `limits` as the limiter is made with them: each function's limit 1 (no check runs under those rules). */
  readonly placeholder: RuleInput[];
  /** The rule set of a request: its limits asked, its plan compiled at first use. */
  planOf(limiter: FloodgateLimiter, req: Req): MaybePromise<RuleSetHandle>;
}

const hasFunctionLimit = (rule: unknown): boolean =>
  typeof rule === 'object' && rule !== null && typeof (rule as { limit?: unknown }).limit === 'function';

/** `limits` with a function `limit` in them (one rule or a list), else undefined. Named plans cannot hold one. */
export function resolveRequestLimits<Req>(limits: unknown, plan: unknown): RequestLimits<Req> | undefined {
  const list: unknown[] = Array.isArray(limits) ? limits : [limits];
  if (!list.some(hasFunctionLimit)) {
    const nested = typeof limits === 'object' && limits !== null && !Array.isArray(limits) ? Object.values(limits) : [];
    if (nested.some((v) => (Array.isArray(v) ? v.some(hasFunctionLimit) : hasFunctionLimit(v)))) {
      throw new ConfigError(
        'limits',
        'a plan cannot have a limit that is a function of the request: use plans, or one rule set with a function',
      );
    }
    return undefined;
  }
  if (plan !== undefined) {
    throw new ConfigError('plan', 'cannot be combined with a limit that is a function of the request (plans need `limits` that name them)');
  }
  const fns: LimitOf<Req>[] = [];
  const slots: number[] = [];
  const template = list.map((rule, i) => {
    if (!hasFunctionLimit(rule)) return rule as RuleInput;
    fns.push((rule as HttpRuleInput<Req>).limit as LimitOf<Req>);
    slots.push(i);
    return { ...(rule as RuleInput), limit: 1 };
  });
  // Per distinct answer, its rule set's handle: as many entries as rule sets the limiter accepted (at most 256).
  const handles = new Map<string, RuleSetHandle>();
  const handleOf = (limiter: FloodgateLimiter, values: readonly unknown[]): RuleSetHandle => {
    const key = values.join(',');
    let handle = handles.get(key);
    if (handle !== undefined) return handle;
    values.forEach((v, k) => {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > Number.MAX_SAFE_INTEGER) {
        throw new TypeError(`floodgate: limit(req) must return a positive integer; got ${describeValue(v)} (limits[${slots[k]}])`);
      }
    });
    const rules = template.map((r) => ({ ...r }));
    slots.forEach((slot, k) => (rules[slot]!.limit = values[k] as number));
    handle = limiter[ruleSetPlan](rules);
    handles.set(key, handle);
    return handle;
  };
  return {
    placeholder: template,
    planOf(limiter, req) {
      const values = fns.map((fn) => fn(req));
      if (!values.some(isThenable)) return handleOf(limiter, values);
      return Promise.all(values).then((v) => handleOf(limiter, v));
    },
  };
}
