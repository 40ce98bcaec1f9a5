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

/** What each source's rule sets are called in messages. */
const SOURCE_TEXT: Record<RuleSetSource, string> = { override: "overrides' limits", request: 'answers of a limit(req)' };

/** A rule set past its source's bound (RuleSets.MAX distinct sets): the HTTP layer falls back on it (http/request-limits.ts). */
export class RuleSetBoundError extends ArgumentError {
  constructor(readonly source: RuleSetSource) {
    super(
      `at most ${RuleSets.MAX} distinct rule sets per limiter for ${SOURCE_TEXT[source]}; this one would be the ${RuleSets.MAX + 1}th: use plans for tiers`,
    );
  }
}

interface Entry {
  readonly plan: PlanState;
  readonly sources: Set<RuleSetSource>;
}

/**
 * The rule sets a limiter compiled besides its plans, each a plan of its own (its script, block cache and
 * units in flight), compiled at first use and kept: a script is generated per rule set (docs/design.md,
 * section 5), so every distinct set is one more script in Redis's script cache and one more plan in
 * process. Bounded per source: at most MAX distinct sets for the overrides' limits and MAX for the answers
 * of request-dependent limits (a set both use counts in both), so that neither can take the other's room:
 * requests that mint answers never stop an operator's overrides from applying. Past a source's bound,
 * plan() throws an ArgumentError.
 */
export class RuleSets {
  static readonly MAX = 256;
  private readonly entries = new Map<string, Entry>();
  /** The sets each source uses now. */
  private readonly counts: Record<RuleSetSource, number> = { override: 0, request: 0 };

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

  /** The plan of a rule set, compiled at its first use; an ArgumentError past MAX distinct sets of `source`. */
  plan(rules: readonly Rule[], source: RuleSetSource): PlanState {
    const key = RuleSets.keyOf(rules);
    const e = this.entries.get(key);
    if (e?.sources.has(source)) return e.plan;
    if (this.counts[source] >= RuleSets.MAX) throw new RuleSetBoundError(source);
    const plan = e?.plan ?? this.compile(rules);
    if (e === undefined) this.entries.set(key, { plan, sources: new Set([source]) });
    else e.sources.add(source);
    this.counts[source]++;
    return plan;
  }

  /** Forgets `source`'s use of every set not in `used`; a set nobody uses any more is dropped. */
  prune(source: RuleSetSource, used: ReadonlySet<string>): void {
    for (const [key, e] of this.entries) {
      if (used.has(key) || !e.sources.delete(source)) continue;
      this.counts[source]--;
      if (e.sources.size > 0) continue;
      e.plan.cache?.dispose();
      this.entries.delete(key);
    }
  }

  dispose(): void {
    for (const e of this.entries.values()) e.plan.cache?.dispose();
    this.entries.clear();
    this.counts.override = this.counts.request = 0;
  }
}
