import { ArgumentError, ConfigError } from '../kernel/errors';
import { unitsOf, type Rule } from '../config/rules';
import type { ResolvedOptions } from './options';
import { resolveRuleSet } from './options/plans';
import type { PlanState } from './plan';

/**
 * Rules besides the plans (an override's, a request's), validated as `limits` is for the limiter's algorithm;
 * only units its plans count (a check's cost names those). Errors name `path`.
 */
export function resolveExtraRules(opts: ResolvedOptions, limits: unknown, path: string): Rule[] {
  const rules = resolveRuleSet(limits, opts.algorithm, path);
  const known = new Set(opts.plans.flatMap((p) => unitsOf(p.rules)));
  const other = unitsOf(rules).find((u) => !known.has(u));
  if (other !== undefined) {
    throw new ConfigError(path, `counts unit '${other}', which no plan of this limiter counts (${[...known].join(', ')})`);
  }
  return rules;
}

/** Who asked for a rule set: an override's `limits` (overrides.ts) or a request-dependent limit (the HTTP layer). */
export type RuleSetSource = 'override' | 'request';

interface Entry {
  readonly plan: PlanState;
  readonly sources: Set<RuleSetSource>;
}

/**
 * The rule sets a limiter compiled besides its plans, each a plan of its own (its script, block cache and
 * units in flight), compiled at first use and kept: a script is generated per rule set (docs/design.md,
 * section 5), so every distinct set is one more script in Redis's script cache and one more plan in
 * process. Bounded: at most MAX distinct sets per limiter; past that, plan() throws an ArgumentError.
 */
export class RuleSets {
  static readonly MAX = 256;
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly compile: (rules: readonly Rule[]) => PlanState) {}

  /** The identity of a rule set: its resolved rules, field by field, in order. */
  static keyOf(rules: readonly Rule[]): string {
    return JSON.stringify(rules.map((r) => [r.limit, r.windowMs, r.for ?? null, r.burst, r.precision, r.unit ?? null]));
  }

  has(rules: readonly Rule[]): boolean {
    return this.entries.has(RuleSets.keyOf(rules));
  }

  get size(): number {
    return this.entries.size;
  }

  /** Whether the overrides' rule sets `keys` fit beside the request-dependent ones kept now. */
  room(keys: ReadonlySet<string>): boolean {
    let n = keys.size;
    for (const [key, e] of this.entries) if (e.sources.has('request') && !keys.has(key)) n++;
    return n <= RuleSets.MAX;
  }

  /** The plan of a rule set, compiled at its first use; an ArgumentError past MAX distinct sets. */
  plan(rules: readonly Rule[], source: RuleSetSource): PlanState {
    const key = RuleSets.keyOf(rules);
    const e = this.entries.get(key);
    if (e !== undefined) {
      e.sources.add(source);
      return e.plan;
    }
    if (this.entries.size >= RuleSets.MAX) {
      throw new ArgumentError(
        `at most ${RuleSets.MAX} distinct rule sets per limiter (overrides' limits and request-dependent limits); this one would be the ${RuleSets.MAX + 1}th: use plans for tiers`,
      );
    }
    const plan = this.compile(rules);
    this.entries.set(key, { plan, sources: new Set([source]) });
    return plan;
  }

  /** Forgets `source`'s use of every set not in `used`; a set nobody uses any more is dropped. */
  prune(source: RuleSetSource, used: ReadonlySet<string>): void {
    for (const [key, e] of this.entries) {
      if (used.has(key) || !e.sources.delete(source) || e.sources.size > 0) continue;
      e.plan.cache?.dispose();
      this.entries.delete(key);
    }
  }

  dispose(): void {
    for (const e of this.entries.values()) e.plan.cache?.dispose();
    this.entries.clear();
  }
}
