import { createLimiter } from '@floodgate/core';
import { createHttpLimiter, type HttpOutcome } from '@floodgate/core/adapter';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import type { Decision, PairState } from '../../src/kernel/decision';
import { planHeaders, rateLimitHeaders } from '../../src/http/headers';
import { durationText, unitBindings } from '../../src/http/unit-headers';
import { omitHeaders, rateLimitHeadersOn, resolveOmitHeaders } from '../../src/http/header-filter';
import { resolveRules } from '../../src/config/rules';

/*
 * docs/budgets.md, "Headers": with rules of several units, draft-8 reports each unit's binding rule and the
 * AI API dialect (`headers: 'openai'`) writes x-ratelimit-{limit,remaining,reset}-<unit>. Decisions come
 * from a real redis-server where the store matters.
 */
const redis = connect();
afterAll(closeClients);

const T = Date.UTC(2026, 10, 23, 12, 0, 30);
const LIMITS = [
  { limit: 60, window: '1m' },
  { limit: 1_000, window: '1h' },
  { limit: 100_000, window: '1m', unit: 'tokens' },
];
const rules = resolveRules(LIMITS);

const state = (over: Partial<PairState>): PairState => ({
  identifier: 'key:team-7',
  limit: 60,
  windowMs: 60_000,
  remaining: 59,
  resetMs: 30_000,
  allowed: true,
  retryAfterMs: 0,
  ...over,
});
const decisionOf = (states: PairState[], over: Partial<Decision> = {}): Decision => ({
  allowed: states.every((s) => s.allowed),
  source: 'redis',
  identifier: 'key:team-7',
  limit: states[0]!.limit,
  windowMs: states[0]!.windowMs,
  remaining: states[0]!.remaining,
  resetMs: states[0]!.resetMs,
  retryAfterMs: 0,
  cost: 1,
  states,
  ...over,
});

test('durations as OpenAI writes x-ratelimit-reset-*: Go duration text', () => {
  expect([0, 1, 20, 999, 1000, 1500, 12_345, 59_999.2, 60_000, 360_000, 90_500, 3_600_000, 3_723_000].map(durationText)).toEqual([
    '0s',
    '1ms',
    '20ms',
    '999ms',
    '1s',
    '1.5s',
    '12.345s',
    '1m0s',
    '1m0s',
    '6m0s',
    '1m30.5s',
    '1h0m0s',
    '1h2m3s',
  ]);
  expect(durationText(-5)).toBe('0s');
  expect(durationText(Infinity)).toBe('0s');
});

test('draft-8 policy: one item per rule, named with its unit when the rules count several', () => {
  expect(planHeaders({ name: 'default', rules }, 'draft-8').policy).toBe(
    '"1m-requests";q=60;w=60, "1h-requests";q=1000;w=3600, "1m-tokens";q=100000;w=60',
  );
  expect(planHeaders({ name: 'llm', rules }, 'draft-7').policy).toBe('60;w=60, 1000;w=3600, 100000;w=60');
  // One unit that is not requests: named too, so a client does not read 100000 as requests.
  expect(planHeaders({ name: 'default', rules: resolveRules([LIMITS[2]!]) }, 'draft-8').policy).toBe('"1m-tokens";q=100000;w=60');
  // Requests alone: as before units (no suffix).
  expect(planHeaders({ name: 'default', rules: resolveRules([LIMITS[0]!]) }, 'draft-8').policy).toBe('"1m";q=60;w=60');
  // Two rules that differ only by unit stay two items.
  const same = resolveRules([
    { limit: 100, window: '1m' },
    { limit: 100, window: '1m', unit: 'tokens' },
  ]);
  expect(planHeaders({ name: 'default', rules: same }, 'draft-8').policy).toBe('"1m-requests";q=100;w=60, "1m-tokens";q=100;w=60');
});

/** The AI API headers after one check of { requests: 1, tokens: 1200 }, 30 s before the minute ends. */
const AFTER_ONE = [
  ['x-ratelimit-limit-requests', '60'],
  ['x-ratelimit-remaining-requests', '59'],
  ['x-ratelimit-reset-requests', '30s'],
  ['x-ratelimit-limit-tokens', '100000'],
  ['x-ratelimit-remaining-tokens', '98800'],
  ['x-ratelimit-reset-tokens', '30s'],
];

test('a real two-unit check: draft-8 gives each unit its binding item; draft-7/6 and legacy the decision’s binding rule', async () => {
  const limiter = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix: uniquePrefix('unit-headers'),
    algorithm: 'fixed-window',
    clock: () => T,
    limits: LIMITS,
  });
  try {
    const d = await limiter.check('key:team-7', { cost: { requests: 1, tokens: 1_200 } });
    expect(d.allowed).toBe(true);
    const out = rateLimitHeaders(planHeaders({ name: 'default', rules }, 'draft-8'), d, undefined, 0);
    expect(out.append).toEqual([
      ['RateLimit-Policy', '"1m-requests";q=60;w=60, "1h-requests";q=1000;w=3600, "1m-tokens";q=100000;w=60'],
      ['RateLimit', '"1m-requests";r=59;t=30'],
      ['RateLimit', '"1m-tokens";r=98800;t=30'],
    ]);
    // The decision's binding pair is the one of least remaining, over every unit: the requests rule here.
    expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'draft-7'), d, undefined, 0).set).toEqual([
      ['RateLimit', 'limit=60, remaining=59, reset=30'],
    ]);
    expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'legacy'), d, undefined, 0).set).toEqual([
      ['X-RateLimit-Limit', '60'],
      ['X-RateLimit-Remaining', '59'],
      ['X-RateLimit-Reset', String(Math.ceil((T + 30_000) / 1000))],
    ]);
    expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'openai'), d, undefined, 0)).toEqual({
      append: [],
      set: AFTER_ONE,
    });
    // The tokens rule denies a check of 99,000 more tokens: tokens report the denying rule, requests theirs.
    const denied = await limiter.check('key:team-7', { cost: { requests: 1, tokens: 99_000 } });
    expect(denied.allowed).toBe(false);
    expect(rateLimitHeaders(planHeaders({ name: 'default', rules }, 'openai'), denied, undefined, 0).set).toEqual(AFTER_ONE);
  } finally {
    await limiter.close();
  }
});

test('per unit the binding rule: a denying rule first, else the least remaining', () => {
  const d = decisionOf([
    state({ remaining: 59 }),
    state({ limit: 1_000, windowMs: 3_600_000, remaining: 3, resetMs: 1_800_000 }),
    state({ limit: 100_000, remaining: 500, unit: 'tokens' }),
    state({
      limit: 5_000_000,
      windowMs: 86_400_000,
      remaining: 0,
      resetMs: 40_000_000,
      allowed: false,
      retryAfterMs: 9_000,
      unit: 'tokens',
    }),
  ]);
  expect(unitBindings(d, ['requests', 'tokens']).map((b) => [b.unit, b.state.limit, b.remaining])).toEqual([
    ['requests', 1_000, 3],
    ['tokens', 5_000_000, 0],
  ]);
  const multi = resolveRules([...LIMITS, { limit: 5_000_000, window: '1d', unit: 'tokens' }]);
  expect(rateLimitHeaders(planHeaders({ name: 'default', rules: multi }, 'draft-8'), d, undefined, 0).append.slice(1)).toEqual([
    ['RateLimit', '"1h-requests";r=3;t=1800'],
    ['RateLimit', '"1d-tokens";r=0;t=40000'],
  ]);
  expect(rateLimitHeaders(planHeaders({ name: 'default', rules: multi }, 'openai'), d, undefined, 0).set).toEqual([
    ['x-ratelimit-limit-requests', '1000'],
    ['x-ratelimit-remaining-requests', '3'],
    ['x-ratelimit-reset-requests', '30m0s'],
    ['x-ratelimit-limit-tokens', '5000000'],
    ['x-ratelimit-remaining-tokens', '0'],
    ['x-ratelimit-reset-tokens', '11h6m40s'],
  ]);
  // A blocked client: its own pairs, at 0 remaining until the block ends.
  const blocked = decisionOf([state({}), state({ identifier: 'ip:1.2.3.4', remaining: 1 }), state({ limit: 100_000, unit: 'tokens' })], {
    allowed: false,
    reason: 'blocked',
    resetMs: 900_000,
  });
  expect(unitBindings(blocked, ['requests', 'tokens']).map((b) => [b.state.identifier, b.remaining, b.resetMs])).toEqual([
    ['key:team-7', 0, 900_000],
    ['key:team-7', 0, 900_000],
  ]);
});

test('openai headers from several limiters: per unit, only a tighter decision overwrites', () => {
  const plan = planHeaders({ name: 'default', rules }, 'openai');
  const earlier = decisionOf([state({ remaining: 5 }), state({ limit: 100_000, remaining: 90_000, unit: 'tokens' })]);
  const later = decisionOf([state({ remaining: 50 }), state({ limit: 100_000, remaining: 10, unit: 'tokens' })]);
  expect(rateLimitHeaders(plan, later, earlier, 0).set.map(([n, v]) => `${n}: ${v}`)).toEqual([
    'x-ratelimit-limit-tokens: 100000',
    'x-ratelimit-remaining-tokens: 10',
    'x-ratelimit-reset-tokens: 30s',
  ]);
  // An earlier decision that counts no tokens leaves the tokens headers to this one.
  const requestsOnly = decisionOf([state({ remaining: 1 })]);
  expect(rateLimitHeaders(plan, later, requestsOnly, 0).set.map(([n]) => n)).toEqual([
    'x-ratelimit-limit-tokens',
    'x-ratelimit-remaining-tokens',
    'x-ratelimit-reset-tokens',
  ]);
  // No rule state (a failure-policy or list decision): no headers.
  expect(rateLimitHeaders(plan, decisionOf([state({})], { states: [] }), undefined, 0).set).toEqual([]);
});

test('omitHeaders drops the unit headers, and refuses a name Floodgate never writes', () => {
  const omit = resolveOmitHeaders(['X-RateLimit-Remaining-Tokens', 'x-ratelimit-reset-requests'])!;
  const out = omitHeaders(
    {
      set: [
        ['x-ratelimit-limit-tokens', '100'],
        ['x-ratelimit-remaining-tokens', '9'],
        ['x-ratelimit-reset-requests', '1s'],
      ],
      append: [],
    },
    omit,
  );
  expect(out.set).toEqual([['x-ratelimit-limit-tokens', '100']]);
  for (const bad of ['x-ratelimit-limit-', 'x-ratelimit-used-tokens', 'x-ratelimit-limit-tok ens', `x-ratelimit-limit-${'u'.repeat(33)}`]) {
    expect(() => resolveOmitHeaders([bad])).toThrow(expect.objectContaining({ option: 'omitHeaders' }));
  }
  // Koa's thrown denial carries the headers already on the response: the unit ones too.
  const headers = new Map<string, string>([
    ['ratelimit', '"1m";r=0;t=3'],
    ['x-ratelimit-remaining-tokens', '0'],
    ['content-type', 'text/plain'],
  ]);
  expect(rateLimitHeadersOn({ getHeader: (n) => headers.get(n.toLowerCase()), getHeaderNames: () => [...headers.keys()] })).toEqual({
    RateLimit: '"1m";r=0;t=3',
    'x-ratelimit-remaining-tokens': '0',
  });
});

test("through core's HTTP layer: 'openai' beside draft-8, a number cost charged to each unit, Retry-After on the denial", async () => {
  const http = createHttpLimiter<object>(
    {
      redis,
      prefix: uniquePrefix('unit-headers-http'),
      algorithm: 'fixed-window',
      clock: () => T,
      limits: [
        { limit: 5, window: '1m' },
        { limit: 3, window: '10s', unit: 'tokens' },
      ],
      headers: ['draft-8', 'openai'],
    },
    [],
  );
  try {
    const first = (await http.decide({}, '10.0.0.9')) as HttpOutcome;
    expect(first.action).toBe('next');
    expect(first.append).toEqual([
      ['RateLimit-Policy', '"1m-requests";q=5;w=60, "10s-tokens";q=3;w=10'],
      ['RateLimit', '"1m-requests";r=4;t=30'],
      ['RateLimit', '"10s-tokens";r=2;t=10'],
    ]);
    expect(first.set).toEqual([
      ['x-ratelimit-limit-requests', '5'],
      ['x-ratelimit-remaining-requests', '4'],
      ['x-ratelimit-reset-requests', '30s'],
      ['x-ratelimit-limit-tokens', '3'],
      ['x-ratelimit-remaining-tokens', '2'],
      ['x-ratelimit-reset-tokens', '10s'],
    ]);
    await http.decide({}, '10.0.0.9');
    await http.decide({}, '10.0.0.9');
    const denied = (await http.decide({}, '10.0.0.9')) as HttpOutcome;
    expect(denied.action).toBe('deny');
    expect(denied.set).toContainEqual(['x-ratelimit-remaining-tokens', '0']);
    expect(denied.set).toContainEqual(['Retry-After', '10']);
    // The next denial comes from the block cache, which keeps every unit's pair: the same headers.
    const cached = (await http.decide({}, '10.0.0.9')) as HttpOutcome;
    expect(cached.decision?.source).toBe('cache');
    expect(cached.set).toEqual(denied.set);
    expect(cached.append).toEqual(denied.append);
    expect(cached.set).toContainEqual(['x-ratelimit-remaining-requests', '2']);
  } finally {
    await http.limiter.close();
  }
});

test("omitHeaders naming an AI dialect header this limiter cannot write is a ConfigError: a misspelt unit, or 'openai' not sent", () => {
  const make = (headers: unknown, omit: string[]) => () =>
    createHttpLimiter<object>({ limits: LIMITS, name: uniquePrefix('omit'), headers, omitHeaders: omit } as never, [], () => undefined);
  expect(make(['draft-8', 'openai'], ['x-ratelimit-limit-tokns'])).toThrow(
    expect.objectContaining({
      option: 'omitHeaders',
      message: expect.stringContaining('names a unit no rule counts (units: requests, tokens)'),
    }),
  );
  expect(make('draft-8', ['x-ratelimit-limit-tokens'])).toThrow(
    expect.objectContaining({ option: 'omitHeaders', message: expect.stringContaining("headers: 'openai'") }),
  );
  // Any case, as the names are matched.
  expect(make('openai', ['X-RateLimit-Reset-Tokens', 'x-ratelimit-limit-requests'])).not.toThrow();
});
