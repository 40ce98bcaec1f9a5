import type { Decision } from '../kernel/decision';
import { shared } from '../kernel/state';
import { rulesOfDecision, type Limiter } from '../engine/limiter';
import type { Rule } from '../config/rules';
import { planHeaders, rateLimitHeaders, type HeaderList, type HeaderMode, type HeaderPlan } from './headers';

/*
 * Which rate-limit headers one limiter writes on a response: per plan, in its header mode; in the draft
 * another limiter already wrote on the same response (two limiters never overwrite each other's items nor
 * mix two syntaxes in one header); and the legacy or AI API headers beside a draft when asked for.
 */

type Draft = 'draft-6' | 'draft-7' | 'draft-8';
const isDraft = (mode: HeaderMode): mode is Draft => mode === 'draft-6' || mode === 'draft-7' || mode === 'draft-8';

/**
 * Per request (Express req, Fastify request, Koa ctx): the draft the first limiter with headers wrote, in a
 * property under a registered symbol (every copy of this package finds it). A property rather than a
 * WeakMap entry: a WeakMap.set on every request was ~20% of a cached denial's cost in the adapter layer.
 * A request object that takes no property (frozen) keeps it in the WeakMap.
 */
const DIALECT = Symbol.for('@floodgate/core.headerDialect');
const dialects = shared('headerDialects', () => new WeakMap<object, Draft>());
type Dialected = { [DIALECT]?: Draft };
const dialectOf = (req: object): Draft | undefined => (req as Dialected)[DIALECT] ?? dialects.get(req);
function setDialect(req: object, draft: Draft): void {
  if (Object.isExtensible(req)) (req as Dialected)[DIALECT] = draft;
  else dialects.set(req, draft);
}

/*
 * The drafts of every limiter with headers made in this process (every copy of this package). While there
 * is one, every limiter writes it anyway, so no request needs the memo above: a property added to each
 * request was 2-3 µs of an Express request's CPU. The set only grows; once a limiter in another draft is
 * made, every limiter reads and writes the memo (a request already past a limiter then has none, and the
 * next one writes its own draft: only for requests in flight while it is made).
 */
const draftsInUse = shared('headerDraftsInUse', () => new Set<Draft>());

/** A plan's headers: in this limiter's mode, in each draft another limiter may have chosen, and the legacy and AI API ones. */
interface HeaderPlans {
  own: HeaderPlan;
  drafts: Record<Draft, HeaderPlan> | undefined;
  legacy: HeaderPlan | undefined;
  openai: HeaderPlan | undefined;
}

/** A limiter's response headers, planned once per plan at construction. */
export class ResponseHeaders {
  private readonly plans = new Map<string | undefined, HeaderPlans>();
  private readonly stamped: boolean;
  /** Whether a decision may come from other rules than its plan's (overrides, a request's limit): else no lookup per request. */
  private readonly otherRules: boolean;

  /** The header plans of rule sets besides the plans (overrides', requests'), planned at first use. */
  private readonly byRules = new WeakMap<readonly Rule[], HeaderPlans>();

  constructor(
    private readonly limiter: Limiter,
    private readonly mode: HeaderMode,
    private readonly alsoLegacy: boolean,
    private readonly alsoOpenai = false,
    requestLimits = false,
  ) {
    this.otherRules = requestLimits || (limiter as Partial<Limiter>).overrides?.enabled === true;
    for (const name of [undefined, ...(limiter.plans ?? [])]) {
      const rules = name === undefined ? limiter.rules : limiter.rulesOf(name);
      this.plans.set(name, this.planned(rules));
      this.byRules.set(rules, this.plans.get(name)!);
    }
    if (isDraft(mode)) draftsInUse.add(mode);
    // Legacy reset headers are a time of day: only they need the clock.
    this.stamped = mode === 'legacy';
  }

  /** A decision's rate-limit headers: in the request's draft (or this limiter's mode), and the legacy and AI API ones beside it when asked. */
  of(req: object, plan: string | undefined, decision: Decision, previous: Decision | undefined): { set: HeaderList; append: HeaderList } {
    // An override's or a request's rules, when the decision was made under other rules than the plan's.
    const rules = this.otherRules ? rulesOfDecision(decision) : undefined;
    const plans = (rules && this.ofRules(rules)) ?? this.plans.get(plan) ?? this.plans.get(undefined)!;
    const out = rateLimitHeaders(this.planFor(req, plans), decision, previous, this.stamped ? Date.now() : 0);
    if (plans.legacy !== undefined) out.set.push(...rateLimitHeaders(plans.legacy, decision, previous, Date.now()).set);
    if (plans.openai !== undefined) out.set.push(...rateLimitHeaders(plans.openai, decision, previous, 0).set);
    return out;
  }

  private planned(rules: readonly Rule[]): HeaderPlans {
    const of = (m: HeaderMode): HeaderPlan => planHeaders({ name: this.limiter.name, rules }, m);
    const drafts = isDraft(this.mode) ? { 'draft-6': of('draft-6'), 'draft-7': of('draft-7'), 'draft-8': of('draft-8') } : undefined;
    return {
      own: of(this.mode),
      drafts,
      legacy: this.alsoLegacy ? of('legacy') : undefined,
      openai: this.alsoOpenai ? of('openai') : undefined,
    };
  }

  private ofRules(rules: readonly Rule[]): HeaderPlans {
    let plans = this.byRules.get(rules);
    if (plans === undefined) {
      plans = this.planned(rules);
      this.byRules.set(rules, plans);
    }
    return plans;
  }

  /** The header plan for this request: its plan's, in the draft another limiter already wrote, if one did. */
  private planFor(req: object, plans: HeaderPlans): HeaderPlan {
    const { own, drafts } = plans;
    if (drafts === undefined || draftsInUse.size === 1) return own;
    const used = dialectOf(req);
    if (used === undefined) {
      setDialect(req, this.mode as Draft);
      return own;
    }
    return drafts[used];
  }
}
