import { ConfigError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { identifierKind } from '../scripts/keys';
import { formatWindow, unitOf, unitsOf, type Rule } from '../config/rules';
import { STATUS_CODES } from './node';
import type { HeaderList } from './header-list';
import { unitBindings, unitDialectHeaders } from './unit-headers';

/**
 * Which rate-limit response headers to send: an IETF draft, the X-RateLimit-* ones ('legacy'), the AI API
 * dialect of x-ratelimit-{limit,remaining,reset}-<unit> ('openai'), or none.
 */
export type HeaderMode = 'draft-8' | 'draft-7' | 'draft-6' | 'legacy' | 'openai' | false;
export const HEADER_MODES: readonly HeaderMode[] = ['draft-8', 'draft-7', 'draft-6', 'legacy', 'openai', false];

export type { HeaderList } from './header-list';

/** One draft-8 policy item: the rule it names, and its name. */
interface PolicyItem {
  readonly limit: number;
  readonly windowMs: number;
  readonly for: string | undefined;
  readonly unit: string;
  readonly name: string;
}

/** Everything about one limiter's headers that does not depend on the request, computed once. */
export interface HeaderPlan {
  readonly mode: HeaderMode;
  /** The RateLimit-Policy value, or '' when the mode has none. */
  readonly policy: string;
  /** draft-8 policy item name per distinct rule (limit, window, `for`, unit), in rule order. */
  readonly items: readonly PolicyItem[];
  /** Whether a rule is scoped (`for`): only then does a name depend on the identifier's kind. */
  readonly scoped: boolean;
  /** The units the rules count, in the order of their first rule. */
  readonly units: readonly string[];
  /** The last draft-8 item this plan wrote (rateLimitHeaders' memo). */
  last?: LastItem;
}

/**
 * The `headers` option: one mode, or a list of at most one draft, 'legacy' and 'openai' together
 * (`['draft-8', 'legacy']`, `['draft-8', 'openai']`).
 */
export type HeadersOption = HeaderMode | readonly Exclude<HeaderMode, false>[];

const HEADERS_EXPECTED =
  "must be one of 'draft-8', 'draft-7', 'draft-6', 'legacy', 'openai' or false, or a list of one draft with 'legacy' and/or 'openai' (['draft-8', 'legacy'])";
const BESIDE = ['legacy', 'openai'];

export function resolveHeaderMode(value: unknown): HeaderMode {
  if (value === undefined || value === true) return 'draft-8';
  if ((HEADER_MODES as readonly unknown[]).includes(value)) return value as HeaderMode;
  throw new ConfigError('headers', `${HEADERS_EXPECTED}; got ${describeValue(value)}`);
}

/**
 * `headers` resolved: `mode` the dialect that negotiates with other limiters (a draft, or 'legacy', or
 * 'openai', or false), `legacy` true when the X-RateLimit-* headers go out beside it, `openai` true when
 * the x-ratelimit-*-<unit> ones do. Two drafts cannot share a response (draft-7 and draft-8 both write
 * `RateLimit`, each draft its own `RateLimit-Policy`), so a list holds at most one, with 'legacy' and
 * 'openai', whose names no draft uses (nor each other: `X-RateLimit-Limit` against
 * `x-ratelimit-limit-requests`): express-rate-limit's `standardHeaders` with `legacyHeaders`, from one
 * middleware that counts the request once.
 */
export function resolveHeaderModes(value: unknown): { mode: HeaderMode; legacy: boolean; openai: boolean } {
  if (!Array.isArray(value)) return { mode: resolveHeaderMode(value), legacy: false, openai: false };
  const modes = value as unknown[];
  const drafts = modes.filter((m) => !BESIDE.includes(m as string));
  if (
    modes.length === 0 ||
    new Set(modes).size !== modes.length ||
    drafts.length > 1 ||
    drafts.some((m) => m === false || !(HEADER_MODES as readonly unknown[]).includes(m))
  ) {
    throw new ConfigError(
      'headers',
      `${HEADERS_EXPECTED}; got [${modes
        .slice(0, 5)
        .map((m) => describeValue(m))
        .join(', ')}${modes.length > 5 ? ', ...' : ''}]`,
    );
  }
  const mode = (drafts[0] ?? (modes.includes('legacy') ? 'legacy' : 'openai')) as HeaderMode;
  return { mode, legacy: mode !== 'legacy' && modes.includes('legacy'), openai: mode !== 'openai' && modes.includes('openai') };
}

/** Structured-field seconds: the drafts want integers; a sub-second window still lasts "1". */
const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * Precomputes a limiter's RateLimit-Policy. draft-8 items are named after the window (`"1m"`), with the
 * limiter's name in front when it is not 'default' (`"search-1m"`), the rule's `for` after (`"1m-user"`)
 * and its unit last when it is not requests or the rules count several (`"1m-tokens"`, `"1m-requests"`),
 * so that the items of several limiters, and of several units, on one response stay apart. The unit is in
 * the name, not in draft-8's `qu` parameter: that parameter takes only the draft's registered quota units
 * (requests, content bytes, concurrent requests).
 */
export function planHeaders(limiter: { name: string; rules: readonly Rule[] }, mode: HeaderMode): HeaderPlan {
  const named: PolicyItem[] = [];
  const used = new Set<string>();
  const items: string[] = [];
  const units = unitsOf(limiter.rules);
  for (const rule of limiter.rules) {
    const unit = unitOf(rule);
    if (named.some((i) => i.limit === rule.limit && i.windowMs === rule.windowMs && i.for === rule.for && i.unit === unit)) continue;
    const parts = [
      limiter.name === 'default' ? '' : limiter.name,
      formatWindow(rule.windowMs),
      rule.for ?? '',
      units.length > 1 || rule.unit !== undefined ? unit : '',
    ];
    let name = parts.filter(Boolean).join('-');
    for (let n = 2; used.has(name); n++) name = `${parts.filter(Boolean).join('-')}-${n}`;
    used.add(name);
    named.push({ limit: rule.limit, windowMs: rule.windowMs, for: rule.for, unit, name });
    items.push(mode === 'draft-8' ? `"${name}";q=${rule.limit};w=${seconds(rule.windowMs)}` : `${rule.limit};w=${seconds(rule.windowMs)}`);
  }
  const policy = mode === false || mode === 'legacy' || mode === 'openai' ? '' : items.join(', ');
  return { mode, policy, items: named, scoped: named.some((i) => i.for !== undefined), units };
}

/** Retry-After in whole seconds: rounded up, never 0 (RFC 9110 §10.2.3; 0 invites an instant retry). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Number.isFinite(retryAfterMs) ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : 1;
}

/**
 * The rate-limit headers of one limiter's decision. `append` headers are lists that several limiters on
 * one response add to; `set` headers hold one value, so they are only given when this decision binds
 * tighter than `previous` (the tightest decision of the limiters that already ran on this request).
 */
export function rateLimitHeaders(
  plan: HeaderPlan,
  decision: Decision,
  previous: Decision | undefined,
  nowMs: number,
): { set: HeaderList; append: HeaderList } {
  const set: HeaderList = [];
  const append: HeaderList = [];
  if (plan.mode === false) return { set, append };
  if (plan.policy) append.push(['RateLimit-Policy', plan.policy]);
  if (decision.states.length === 0 || !Number.isFinite(decision.limit)) return { set, append };
  if (plan.mode === 'openai') return { set: unitDialectHeaders(plan.units, decision, previous), append };
  const remaining = Math.max(0, Math.floor(decision.remaining));
  const reset = Math.max(0, Math.ceil(decision.resetMs / 1000));
  if (plan.mode === 'draft-8') {
    if (plan.units.length > 1) {
      for (const b of unitBindings(decision, plan.units)) {
        const name = itemName(plan, b.state.limit, b.state.windowMs, b.state.identifier, b.unit);
        if (name !== undefined) append.push(['RateLimit', `"${name}";r=${b.remaining};t=${Math.max(0, Math.ceil(b.resetMs / 1000))}`]);
      }
      return { set, append };
    }
    const item = draft8Item(plan, decision, remaining, reset);
    if (item !== undefined) append.push(['RateLimit', item]);
    return { set, append };
  }
  if (previous !== undefined && !bindsTighter(decision, previous)) return { set, append };
  if (plan.mode === 'draft-7') {
    set.push(['RateLimit', `limit=${decision.limit}, remaining=${remaining}, reset=${reset}`]);
  } else if (plan.mode === 'draft-6') {
    set.push(['RateLimit-Limit', String(decision.limit)], ['RateLimit-Remaining', String(remaining)], ['RateLimit-Reset', String(reset)]);
  } else {
    // The decision's own instant (the store's clock), so every response of one window gives the same Reset.
    const resetEpoch = Math.ceil((decision.resetAt ?? nowMs + decision.resetMs) / 1000);
    set.push(
      ['X-RateLimit-Limit', String(decision.limit)],
      ['X-RateLimit-Remaining', String(remaining)],
      ['X-RateLimit-Reset', String(resetEpoch)],
    );
  }
  return { set, append };
}

/** A plan's last draft-8 RateLimit item: a client that stays denied gets the same item for a second. */
interface LastItem {
  id: string | undefined;
  limit: number;
  windowMs: number;
  r: number;
  t: number;
  item: string | undefined;
}

function draft8Item(plan: HeaderPlan, decision: Decision, remaining: number, reset: number): string | undefined {
  const { identifier: id, limit, windowMs } = decision;
  const last = plan.last;
  if (
    last !== undefined &&
    last.id === id &&
    last.limit === limit &&
    last.windowMs === windowMs &&
    last.r === remaining &&
    last.t === reset
  )
    return last.item;
  const name = itemName(plan, limit, windowMs, id, plan.units[0]!);
  const item = name === undefined ? undefined : `"${name}";r=${remaining};t=${reset}`;
  plan.last = { id, limit, windowMs, r: remaining, t: reset, item };
  return item;
}

/**
 * The policy item name of the rule of `limit`, `windowMs` and `unit` that applies to `id`: a rule scoped to
 * the identifier's kind first, then an unscoped one. A scan of a few rules, per request: no key strings.
 */
function itemName(plan: HeaderPlan, limit: number, windowMs: number, id: string | undefined, unit: string): string | undefined {
  const kind = plan.scoped && id !== undefined ? identifierKind(id) : undefined;
  let unscoped: string | undefined;
  for (const i of plan.items) {
    if (i.limit !== limit || i.windowMs !== windowMs || i.unit !== unit) continue;
    if (i.for === undefined) unscoped ??= i.name;
    else if (i.for === kind) return i.name;
  }
  return unscoped;
}

/** Denied beats allowed; then fewer remaining; a decision with no rule states never binds. */
export function bindsTighter(a: Decision, b: Decision): boolean {
  if (b.states.length === 0) return a.states.length > 0 || !a.allowed;
  if (a.allowed !== b.allowed) return !a.allowed;
  return a.remaining < b.remaining;
}

/** The body Fastify's default error handler would give: `{ statusCode, error, message }`. */
export function errorBody(statusCode: number, message: string): { statusCode: number; error: string; message: string } {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

export function defaultDenyMessage(retryAfterS: number): string {
  return `Rate limit exceeded, retry in ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}`;
}

export const UNAVAILABLE_MESSAGE = 'Rate limiting is temporarily unavailable; retry shortly';
