import { ConfigError, describeValue } from '../kernel/errors';
import { safeLogger, type Logger } from '../kernel/logger';
import { isThenable } from '../kernel/thenable';
import type { RuleInput } from '../config/rules';
import { ruleSetPlan, type FloodgateLimiter, type RuleSetHandle } from '../engine/limiter';
import { RuleSetBoundError, RuleSets } from '../engine/rule-sets';
import type { MaybePromise } from './option-types';

/*
 * A limit that is a function of the request (docs/overrides.md, "A limit per request"): the rule's other
 * fields are fixed, its `limit` is what `limit(req)` answers. A script is generated per rule set, so each
 * distinct answer is a rule set the limiter compiles at its first use and keeps (engine/rule-sets.ts: at
 * most 256 answers per limiter, beside the overrides' own 256). An answer that is not a positive integer
 * is an error the framework's error handling gets, never a silent default.
 *
 * An answer past the bound is checked under the limiter's own rules, where the function's limit is 1: the
 * strictest answer there is, so a client that can make the function answer new values (the bound is only
 * reached that way, or by a limit computed from too many distinct values) gets no more than any answer
 * would give it, counted in its one key as every answer is; the known answers keep theirs, overrides keep
 * applying, and the process warns once. Not the error it was: one client minting answers turned every
 * new answer, everyone's, into a 500 for the life of the process. Not evicting known answers either: each
 * eviction compiles a new script, and Redis's script cache is what the bound protects.
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
  /**
   * The rule set of a request: its limits asked, its plan compiled at first use; undefined past the bound
   * (the limiter's own rules, a function's limit 1, then check it).
   */
  planOf(limiter: FloodgateLimiter, req: Req): MaybePromise<RuleSetHandle | undefined>;
}

const hasFunctionLimit = (rule: unknown): boolean =>
  typeof rule === 'object' && rule !== null && typeof (rule as { limit?: unknown }).limit === 'function';

/**
 * `limits` with a function `limit` in them (one rule or a list), else undefined. Named plans cannot hold one.
 * `logger`: the limiter's (the option as given), for the warning at the bound.
 */
export function resolveRequestLimits<Req>(limits: unknown, plan: unknown, logger?: Logger): RequestLimits<Req> | undefined {
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
  // An answer past the bound is not kept: a client minting answers grows nothing.
  const handles = new Map<string, RuleSetHandle>();
  let full = false;
  const handleOf = (limiter: FloodgateLimiter, values: readonly unknown[]): RuleSetHandle | undefined => {
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
    try {
      handle = limiter[ruleSetPlan](rules);
    } catch (err) {
      if (!(err instanceof RuleSetBoundError)) throw err;
      if (!full) {
        full = true;
        safeLogger(logger).warn(
          `floodgate: limiter '${limiter.name}': limit(req) gave more than ${RuleSets.MAX} distinct answers, the most a limiter compiles; a request with an answer not seen before is checked under the limiter's own rules, where the function's limit is 1, until this process restarts. Compute limits from a few tiers (plans: docs/plans.md), never from what a client sends`,
        );
      }
      return undefined;
    }
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
