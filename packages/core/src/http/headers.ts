import { ConfigError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { identifierKind } from '../scripts/keys';
import { formatWindow, type Rule } from '../config/rules';
import { STATUS_CODES } from './node';

/** Which rate-limit response headers to send. */
export type HeaderMode = 'draft-8' | 'draft-7' | 'draft-6' | 'legacy' | false;
export const HEADER_MODES: readonly HeaderMode[] = ['draft-8', 'draft-7', 'draft-6', 'legacy', false];

export type HeaderList = [name: string, value: string][];

/** Everything about one limiter's headers that does not depend on the request, computed once. */
export interface HeaderPlan {
  readonly mode: HeaderMode;
  /** The RateLimit-Policy value, or '' when the mode has none. */
  readonly policy: string;
  /** draft-8 policy item name per rule, keyed by `limit/windowMs/for`. */
  readonly itemNames: ReadonlyMap<string, string>;
  /** The last draft-8 item this plan wrote (rateLimitHeaders' memo). */
  last?: LastItem;
}

/** The `headers` option: one mode, or one draft and 'legacy' together (`['draft-8', 'legacy']`). */
export type HeadersOption = HeaderMode | readonly Exclude<HeaderMode, false>[];

const HEADERS_EXPECTED =
  "must be one of 'draft-8', 'draft-7', 'draft-6', 'legacy' or false, or a draft with 'legacy' (['draft-8', 'legacy'])";

export function resolveHeaderMode(value: unknown): HeaderMode {
  if (value === undefined || value === true) return 'draft-8';
  if ((HEADER_MODES as readonly unknown[]).includes(value)) return value as HeaderMode;
  throw new ConfigError('headers', `${HEADERS_EXPECTED}; got ${describeValue(value)}`);
}

/**
 * `headers` resolved: `mode` the dialect that negotiates with other limiters (a draft, or 'legacy', or
 * false), and `legacy` true when the X-RateLimit-* headers go out beside a draft. Two drafts cannot share a
 * response (draft-7 and draft-8 both write `RateLimit`, each draft its own `RateLimit-Policy`), so a list
 * holds at most one, and 'legacy', whose names no draft uses: express-rate-limit's `standardHeaders` with
 * `legacyHeaders`, from one middleware that counts the request once.
 */
export function resolveHeaderModes(value: unknown): { mode: HeaderMode; legacy: boolean } {
  if (!Array.isArray(value)) return { mode: resolveHeaderMode(value), legacy: false };
  const modes = value as unknown[];
  const drafts = modes.filter((m) => m !== 'legacy');
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
  if (drafts.length === 0) return { mode: 'legacy', legacy: false };
  return { mode: drafts[0] as HeaderMode, legacy: modes.includes('legacy') };
}

const ruleKey = (limit: number, windowMs: number, kind: string | undefined): string => `${limit}/${windowMs}/${kind ?? ''}`;
/** Structured-field seconds: the drafts want integers; a sub-second window still lasts "1". */
const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * Precomputes a limiter's RateLimit-Policy. draft-8 items are named after the window (`"1m"`), with the
 * limiter's name in front when it is not 'default' (`"search-1m"`) and the rule's `for` after
 * (`"1m-user"`), so that the items of several limiters on one response stay apart.
 */
export function planHeaders(limiter: { name: string; rules: readonly Rule[] }, mode: HeaderMode): HeaderPlan {
  const itemNames = new Map<string, string>();
  const used = new Set<string>();
  const items: string[] = [];
  for (const rule of limiter.rules) {
    const key = ruleKey(rule.limit, rule.windowMs, rule.for);
    if (itemNames.has(key)) continue;
    const parts = [limiter.name === 'default' ? '' : limiter.name, formatWindow(rule.windowMs), rule.for ?? ''];
    let name = parts.filter(Boolean).join('-');
    for (let n = 2; used.has(name); n++) name = `${parts.filter(Boolean).join('-')}-${n}`;
    used.add(name);
    itemNames.set(key, name);
    items.push(mode === 'draft-8' ? `"${name}";q=${rule.limit};w=${seconds(rule.windowMs)}` : `${rule.limit};w=${seconds(rule.windowMs)}`);
  }
  return { mode, policy: mode === false || mode === 'legacy' ? '' : items.join(', '), itemNames };
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
  const remaining = Math.max(0, Math.floor(decision.remaining));
  const reset = Math.max(0, Math.ceil(decision.resetMs / 1000));
  if (plan.mode === 'draft-8') {
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
  const kind = id === undefined ? undefined : identifierKind(id);
  const name = plan.itemNames.get(ruleKey(limit, windowMs, kind)) ?? plan.itemNames.get(ruleKey(limit, windowMs, undefined));
  const item = name === undefined ? undefined : `"${name}";r=${remaining};t=${reset}`;
  plan.last = { id, limit, windowMs, r: remaining, t: reset, item };
  return item;
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
