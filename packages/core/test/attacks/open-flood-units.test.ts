import type { Decision, LimiterOptions, RuleInput } from '@floodgate/core';
import type { seam } from '@floodgate/core/testing';
import { scripted, uniquePrefix, type ConnectionState, type ScriptedStore } from '@floodgate/testing';

/*
 * docs/security.md, "'open' admits no flood", with rules of several units (docs/budgets.md): a flood of
 * checks from one client, each with a cost per unit, is admitted at most each unit's limit in one process
 * under `failure: 'open'`, whatever state the Redis client is in. The in-process guards (units in flight,
 * what 'open' admitted) keep one account per unit: a check must fit every unit's, and Redis, once it
 * answers, counts what the policy admitted in each.
 *
 * 600 checks of one identifier against 100 requests and 10,000 tokens a minute, started 5 per event-loop
 * turn with 1 ms of virtual time between turns, on a scripted store; the tokens cost varies (every third
 * check 400 tokens, the others 40), so either unit can bind first. Every admitted check is summed per unit:
 * the policy's admissions and Redis's after it. Against a frozen redis-server: test/resilience/open-flood.test.ts.
 */

const REQUESTS = 100;
const TOKENS = 10_000;
const FLOOD = 600;
const CLIENT = 'key:team-7';
const quiet = { warn: () => undefined };
type Cost = { requests: number; tokens: number };
/** Cost patterns of the flood's checks, by which unit runs out first. */
const patterns: Record<string, (i: number) => Cost> = {
  'tokens bind': (i) => ({ requests: 1, tokens: i % 3 === 0 ? 400 : 40 }),
  'requests bind': () => ({ requests: 1, tokens: 10 }),
  // Checks that charge one unit each, alternately: neither unit's account may lend to the other.
  'one unit per check': (i) => (i % 2 === 0 ? { requests: 0, tokens: 500 } : { requests: 1, tokens: 0 }),
};

const variants: Record<string, Partial<LimiterOptions>> = {
  plain: {},
  refunds: { refunds: true },
  // Every check reaches Redis (the block cache is not asked first).
  penalty: { penalty: true },
  'token-bucket': { algorithm: 'token-bucket' },
};

interface Rig {
  store: ScriptedStore;
  rt: seam.VirtualRuntime;
  limiter: ReturnType<typeof scripted>['limiter'];
}

function rig(variant: string, connection: ConnectionState, timeoutMs?: number, limits?: RuleInput[]): Rig {
  return scripted(
    {
      prefix: uniquePrefix('open-flood-units'),
      limits: limits ?? [
        { limit: REQUESTS, window: '1m' },
        { limit: TOKENS, window: '1m', unit: 'tokens' },
      ],
      logger: quiet,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...variants[variant],
    },
    connection,
  );
}

/** What a list of checks admitted, per unit. */
interface Admitted {
  checks: number;
  requests: number;
  tokens: number;
  policy: number;
}

/** `n` checks of one client, 5 started per turn, 1 ms apart; `from` offsets the cost pattern; `during(i)` runs before the i-th. */
async function flood(
  { rt, limiter }: Rig,
  n = FLOOD,
  from = 0,
  costOf = patterns['tokens bind']!,
  during?: (i: number) => void,
): Promise<Admitted> {
  const checks: Promise<Decision>[] = [];
  for (let i = 0; i < n; i++) {
    during?.(i);
    checks.push(limiter.check(CLIENT, { cost: costOf(from + i) }));
    if (i % 5 === 4) await rt.advance(1);
  }
  const decisions = await rt.until(Promise.all(checks));
  const sum: Admitted = { checks: 0, requests: 0, tokens: 0, policy: 0 };
  decisions.forEach((d, i) => {
    if (!d.allowed) return;
    sum.checks++;
    sum.requests += costOf(from + i).requests;
    sum.tokens += costOf(from + i).tokens;
    if (d.source === 'fallback') sum.policy++;
  });
  return sum;
}

const plus = (a: Admitted, b: Admitted): Admitted => ({
  checks: a.checks + b.checks,
  requests: a.requests + b.requests,
  tokens: a.tokens + b.tokens,
  policy: a.policy + b.policy,
});

function withinEachUnit(a: Admitted): void {
  expect(a.requests).toBeLessThanOrEqual(REQUESTS);
  expect(a.tokens).toBeLessThanOrEqual(TOKENS);
}

describe.each(Object.keys(variants))('failure: open, two units, %s', (variant) => {
  test('a client connecting to a paused Redis: the policy admits within each unit, and Redis nothing past it once it answers', async () => {
    const r = rig(variant, 'connecting', 20);
    const during = await flood(r);
    r.store.connect();
    r.store.behave({ answer: 1 });
    const after = await flood(r, FLOOD, FLOOD);
    expect(during.policy).toBeGreaterThan(0);
    withinEachUnit(plus(during, after));
  });

  test('a client that connects during the flood (timeoutMs 5): within each unit across both sides of the connect', async () => {
    const r = rig(variant, 'connecting', 5);
    r.store.behave({ answer: 1 });
    const all = await flood(r, FLOOD, 0, patterns['tokens bind'], (i) => i === 100 && r.store.connect());
    withinEachUnit(all);
    expect(all.policy).toBeGreaterThan(0);
  });

  test.each(Object.keys(patterns))(
    'a connected client, Redis paused in the middle of the flood (%s): nothing admitted past either unit',
    async (pattern) => {
      const r = rig(variant, 'ready', 50);
      r.store.behave({ answer: 1 });
      // 20 checks first: each unit has room left when Redis pauses.
      const before = await flood(r, 20, 0, patterns[pattern]);
      expect(before.checks).toBe(20);
      r.store.behave('hold');
      const during = await flood(r, FLOOD, 20, patterns[pattern]);
      withinEachUnit(plus(before, during));
      expect(during.checks).toBeGreaterThan(0);
    },
  );
});

/*
 * The first check of a burst: it started with nothing else of its client in flight, and the replies of the
 * whole burst came in one read, so the others had left by the time it resumed. Before, its admission by
 * Redis was not noted, and once Redis paused the policy admitted that check's cost again past the limit
 * (10,400 of 10,000 tokens here, one unit or two, every run; under load the flood above saw it too).
 */
test.each<[string, RuleInput[] | undefined, (i: number) => number | Cost]>([
  ['one unit', [{ limit: TOKENS, window: '1m', unit: 'tokens' }], (i) => patterns['tokens bind']!(i).tokens],
  ['two units', undefined, (i) => patterns['tokens bind']!(i)],
])('%s: a burst whose replies are read together, then Redis paused: its first check is noted too', async (_name, limits, cost) => {
  const { store, rt, limiter } = rig('plain', 'ready', 50, limits);
  const tokens = (i: number): number => patterns['tokens bind']!(i).tokens;
  // The five commands are held, then answered at once: their replies in one read.
  store.behave('hold');
  const burst = Array.from({ length: 5 }, (_x, i) => limiter.check(CLIENT, { cost: cost(i) }));
  await rt.settle();
  store.release();
  const before = (await Promise.all(burst)).reduce((n, d, i) => n + (d.allowed ? tokens(i) : 0), 0);
  expect(before).toBe(400 + 40 + 40 + 400 + 40);
  // Redis pauses: the rest of the flood takes the policy.
  const checks: Promise<Decision>[] = [];
  for (let i = 5; i < FLOOD; i++) checks.push(limiter.check(CLIENT, { cost: cost(i) }));
  const during = (await rt.until(Promise.all(checks))).reduce((n, d, i) => n + (d.allowed ? tokens(i + 5) : 0), 0);
  expect(before + during).toBeLessThanOrEqual(TOKENS);
  expect(during).toBeGreaterThan(0);
});

describe('Redis down (the connection lost) from the first check', () => {
  test.each(Object.keys(patterns))('%s: each unit admitted at most its limit, then denied locally', async (pattern) => {
    const all = await flood(rig('plain', 'down', 50), FLOOD, 0, patterns[pattern]);
    withinEachUnit(all);
    // 'open' still admits: only the policy answered, up to the unit that ran out first.
    expect(all.policy).toBe(all.checks);
    if (pattern === 'tokens bind') {
      expect(all.tokens).toBeGreaterThan(TOKENS - 400);
      expect(all.requests).toBeLessThan(REQUESTS);
    } else {
      // Each unit reaches its own limit: 100 requests (and 1,000 or 10,000 tokens).
      expect(all.requests).toBe(REQUESTS);
      if (pattern === 'one unit per check') expect(all.tokens).toBe(TOKENS);
    }
  });
});
