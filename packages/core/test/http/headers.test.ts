import type { Decision, PairState } from '../../src/kernel/decision';
import {
  bindsTighter,
  errorBody,
  planHeaders,
  rateLimitHeaders,
  resolveHeaderMode,
  resolveHeaderModes,
  retryAfterSeconds,
} from '../../src/http/headers';
import { resolveRules } from '../../src/config/rules';

const rules = resolveRules([
  { limit: 10, window: '1s' },
  { limit: 120, window: '1m' },
  { limit: 50, window: '1h', for: 'user' },
]);
const state = (over: Partial<PairState>): PairState => ({
  identifier: 'ip:1.2.3.4',
  limit: 10,
  windowMs: 1000,
  remaining: 9,
  resetMs: 400,
  allowed: true,
  retryAfterMs: 0,
  ...over,
});
const decision = (over: Partial<Decision> = {}): Decision => ({
  allowed: true,
  source: 'redis',
  identifier: 'ip:1.2.3.4',
  limit: 10,
  windowMs: 1000,
  remaining: 9,
  resetMs: 400,
  retryAfterMs: 0,
  cost: 1,
  states: [state({})],
  ...over,
});

test('draft-8 policy lists every rule, named by window, limiter and scope', () => {
  expect(planHeaders({ name: 'default', rules }, 'draft-8').policy).toBe('"1s";q=10;w=1, "1m";q=120;w=60, "1h-user";q=50;w=3600');
  expect(planHeaders({ name: 'search', rules: rules.slice(1, 2) }, 'draft-8').policy).toBe('"search-1m";q=120;w=60');
  expect(planHeaders({ name: 'default', rules: resolveRules({ limit: 3, window: 500 }) }, 'draft-8').policy).toBe('"500ms";q=3;w=1');
});

test('draft-8 RateLimit names the binding rule, including a scoped one', () => {
  const plan = planHeaders({ name: 'default', rules }, 'draft-8');
  expect(rateLimitHeaders(plan, decision(), undefined, 0).append).toEqual([
    ['RateLimit-Policy', '"1s";q=10;w=1, "1m";q=120;w=60, "1h-user";q=50;w=3600'],
    ['RateLimit', '"1s";r=9;t=1'],
  ]);
  const user = decision({ identifier: 'user:7', limit: 50, windowMs: 3_600_000, remaining: 0, resetMs: 1_800_500 });
  expect(rateLimitHeaders(plan, user, undefined, 0).append[1]).toEqual(['RateLimit', '"1h-user";r=0;t=1801']);
});

test('draft-7, draft-6 and legacy give their own single-value headers; legacy Reset is epoch seconds', () => {
  const d = decision({ limit: 120, windowMs: 60_000, remaining: 100, resetMs: 30_001 });
  expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'draft-7'), d, undefined, 0)).toEqual({
    append: [['RateLimit-Policy', '10;w=1, 120;w=60, 50;w=3600']],
    set: [['RateLimit', 'limit=120, remaining=100, reset=31']],
  });
  expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'draft-6'), d, undefined, 0).set).toEqual([
    ['RateLimit-Limit', '120'],
    ['RateLimit-Remaining', '100'],
    ['RateLimit-Reset', '31'],
  ]);
  expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'legacy'), d, undefined, 1_700_000_000_000)).toEqual({
    append: [],
    set: [
      ['X-RateLimit-Limit', '120'],
      ['X-RateLimit-Remaining', '100'],
      ['X-RateLimit-Reset', '1700000031'],
    ],
  });
  expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, false), d, undefined, 0)).toEqual({ set: [], append: [] });
});

test('single-value headers are given only by the decision that binds tighter than the earlier one', () => {
  const plan = planHeaders({ name: 'default', rules }, 'legacy');
  const loose = decision({ remaining: 50 });
  const tight = decision({ remaining: 2 });
  expect(rateLimitHeaders(plan, loose, tight, 0).set).toEqual([]);
  expect(rateLimitHeaders(plan, tight, loose, 0).set).not.toEqual([]);
  expect(bindsTighter(decision({ allowed: false, remaining: 5 }), tight)).toBe(true);
  expect(bindsTighter(loose, decision({ states: [] }))).toBe(true);
});

test('no RateLimit item when no rule applied (only the policy)', () => {
  const plan = planHeaders({ name: 'default', rules }, 'draft-8');
  const none = decision({ states: [], limit: Infinity, remaining: Infinity, identifier: undefined });
  expect(rateLimitHeaders(plan, none, undefined, 0).append.map(([n]) => n)).toEqual(['RateLimit-Policy']);
});

test('Retry-After is whole seconds, rounded up, at least 1', () => {
  expect(retryAfterSeconds(0)).toBe(1);
  expect(retryAfterSeconds(1)).toBe(1);
  expect(retryAfterSeconds(1000)).toBe(1);
  expect(retryAfterSeconds(1001)).toBe(2);
  expect(retryAfterSeconds(Infinity)).toBe(1);
});

test('bodies and header modes', () => {
  expect(errorBody(429, 'x')).toEqual({ statusCode: 429, error: 'Too Many Requests', message: 'x' });
  expect(resolveHeaderMode(undefined)).toBe('draft-8');
  expect(resolveHeaderMode(false)).toBe(false);
  expect(() => resolveHeaderMode('draft-9')).toThrow(expect.objectContaining({ option: 'headers' }));
});

test("headers as a list: one draft with 'legacy' and/or 'openai'; anything else is a ConfigError naming `headers`", () => {
  expect(resolveHeaderModes('draft-7')).toEqual({ mode: 'draft-7', legacy: false, openai: false });
  expect(resolveHeaderModes(['draft-8', 'legacy'])).toEqual({ mode: 'draft-8', legacy: true, openai: false });
  expect(resolveHeaderModes(['legacy', 'draft-6'])).toEqual({ mode: 'draft-6', legacy: true, openai: false });
  expect(resolveHeaderModes(['draft-7'])).toEqual({ mode: 'draft-7', legacy: false, openai: false });
  expect(resolveHeaderModes(['legacy'])).toEqual({ mode: 'legacy', legacy: false, openai: false });
  expect(resolveHeaderModes('openai')).toEqual({ mode: 'openai', legacy: false, openai: false });
  expect(resolveHeaderModes(['openai', 'draft-8'])).toEqual({ mode: 'draft-8', legacy: false, openai: true });
  expect(resolveHeaderModes(['draft-8', 'legacy', 'openai'])).toEqual({ mode: 'draft-8', legacy: true, openai: true });
  expect(resolveHeaderModes(['openai', 'legacy'])).toEqual({ mode: 'legacy', legacy: false, openai: true });
  // Two drafts would write `RateLimit` (or `RateLimit-Policy`) twice in two syntaxes.
  for (const bad of [
    [],
    ['draft-7', 'draft-8'],
    ['legacy', 'legacy'],
    ['openai', 'openai'],
    [false],
    [true],
    ['draft-8', 'legacy', 'draft-6'],
    ['x-rate'],
    ['anthropic'],
  ]) {
    expect(() => resolveHeaderModes(bad)).toThrow(
      expect.objectContaining({ option: 'headers', message: expect.stringContaining("['draft-8', 'legacy']") }),
    );
  }
});
