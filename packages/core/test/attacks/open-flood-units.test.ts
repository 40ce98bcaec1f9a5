import type Redis from 'ioredis';
import { createLimiter, type Decision, type Limiter, type LimiterOptions, type RuleInput } from '@floodgate/core';
import { closeClients, connect, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/security.md, "'open' admits no flood", with rules of several units (docs/budgets.md): a flood of
 * checks from one client, each with a cost per unit, is admitted at most each unit's limit in one process
 * under `failure: 'open'`, whatever state the Redis client is in. The in-process guards (units in flight,
 * what 'open' admitted) keep one account per unit: a check must fit every unit's, and Redis, once it
 * answers, counts what the policy admitted in each.
 *
 * 600 checks of one identifier against 100 requests and 10,000 tokens a minute, started 5 per event-loop
 * turn; the tokens cost varies (every third check 400 tokens, the others 40), so either unit can bind
 * first. Every admitted check is summed per unit: the policy's admissions and Redis's after it.
 */
afterAll(closeClients);

const REQUESTS = 100;
const TOKENS = 10_000;
const FLOOD = 600;
const CLIENT = 'key:team-7';
const quiet = { warn: () => undefined };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
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

/** Admitted per unit, variant and state, printed at the end with FLOODGATE_FLOOD_FIGURES=1 (docs/security.md quotes them). */
const figures: string[] = [];
afterAll(() => {
  if (process.env.FLOODGATE_FLOOD_FIGURES === '1')
    process.stdout.write(
      `open-flood-units: admitted per unit of ${FLOOD} checks (limits ${REQUESTS} requests, ${TOKENS} tokens):\n${figures.join('\n')}\n`,
    );
});

let server: RedisProcess;
beforeAll(async () => {
  server = await spawnRedis();
});
afterAll(() => server.stop());

function limiterOn(client: Redis, variant: string, timeoutMs?: number): Limiter {
  return createLimiter({
    redis: client,
    prefix: uniquePrefix('open-flood-units'),
    limits: [
      { limit: REQUESTS, window: '1m' },
      { limit: TOKENS, window: '1m', unit: 'tokens' },
    ],
    logger: quiet,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...variants[variant],
  });
}

/** What a list of checks admitted, per unit. */
interface Admitted {
  checks: number;
  requests: number;
  tokens: number;
  policy: number;
}

/** `n` checks of one client, 5 started per turn of the event loop; `from` offsets the cost pattern. */
async function flood(limiter: Limiter, n = FLOOD, from = 0, costOf = patterns['tokens bind']!): Promise<Admitted> {
  const checks: Promise<Decision>[] = [];
  for (let i = 0; i < n; i++) {
    checks.push(limiter.check(CLIENT, { cost: costOf(from + i) }));
    if (i % 5 === 4) await new Promise((r) => setImmediate(r));
  }
  const decisions = await Promise.all(checks);
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
const show = (a: Admitted): string => `${a.checks} checks (${a.policy} by the policy): ${a.requests} requests, ${a.tokens} tokens`;

function withinEachUnit(a: Admitted): void {
  expect(a.requests).toBeLessThanOrEqual(REQUESTS);
  expect(a.tokens).toBeLessThanOrEqual(TOKENS);
}

async function ready(client: Redis): Promise<void> {
  for (let i = 0; i < 100 && client.status !== 'ready'; i++) await sleep(50);
  expect(client.status).toBe('ready');
}

describe.each(Object.keys(variants))('failure: open, two units, %s', (variant) => {
  test('a client connecting to a paused Redis: the policy admits within each unit, and Redis nothing past it once it answers', async () => {
    const admin = connect(server.url);
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
    const client = connect(server.url);
    const limiter = limiterOn(client, variant, 20);
    try {
      const during = await flood(limiter);
      await ready(client);
      const after = await flood(limiter, FLOOD, FLOOD);
      figures.push(`${variant}, connecting to a paused Redis: ${show(during)} + ${show(after)}`);
      expect(during.policy).toBeGreaterThan(0);
      withinEachUnit(plus(during, after));
    } finally {
      await limiter.close();
    }
  });

  test('a client that connects during the flood (timeoutMs 5): within each unit across both sides of the connect', async () => {
    const client = connect(server.url);
    const limiter = limiterOn(client, variant, 5);
    try {
      const all = await flood(limiter);
      figures.push(`${variant}, connecting, timeoutMs 5: ${show(all)}`);
      withinEachUnit(all);
    } finally {
      await limiter.close();
    }
  });

  test.each(Object.keys(patterns))(
    'a connected client, Redis paused in the middle of the flood (%s): nothing admitted past either unit',
    async (pattern) => {
      const client = connect(server.url);
      await client.ping();
      const limiter = limiterOn(client, variant, 50);
      try {
        // 20 checks first: each unit has room left when Redis pauses.
        const before = await flood(limiter, 20, 0, patterns[pattern]);
        expect(before.checks).toBe(20);
        const admin = connect(server.url);
        await admin.call('CLIENT', 'PAUSE', '600', 'ALL');
        const during = await flood(limiter, FLOOD, 20, patterns[pattern]);
        figures.push(`${variant}, ${pattern}, connected, paused mid-flood: ${show(before)} + ${show(during)}`);
        withinEachUnit(plus(before, during));
        expect(during.checks).toBeGreaterThan(0);
        await sleep(700);
      } finally {
        await limiter.close();
      }
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
])('%s: a burst whose replies are read together, then Redis paused: its first check is noted too', async (name, limits, cost) => {
  const client = connect(server.url);
  await client.ping();
  const limiter = createLimiter({
    redis: client,
    prefix: uniquePrefix('open-flood-burst'),
    limits: limits ?? [
      { limit: REQUESTS, window: '1m' },
      { limit: TOKENS, window: '1m', unit: 'tokens' },
    ],
    timeoutMs: 50,
    logger: quiet,
  });
  try {
    const tokens = (i: number): number => patterns['tokens bind']!(i).tokens;
    const burst = Array.from({ length: 5 }, (_x, i) => limiter.check(CLIENT, { cost: cost(i) }));
    // The commands go out; this process then stays busy while all five replies arrive.
    await new Promise((r) => setImmediate(r));
    const until = Date.now() + 20;
    while (Date.now() < until);
    const before = (await Promise.all(burst)).reduce((n, d, i) => n + (d.allowed ? tokens(i) : 0), 0);
    expect(before).toBe(400 + 40 + 40 + 400 + 40);
    const admin = connect(server.url);
    await admin.call('CLIENT', 'PAUSE', '300', 'ALL');
    const checks: Promise<Decision>[] = [];
    for (let i = 5; i < FLOOD; i++) checks.push(limiter.check(CLIENT, { cost: cost(i) }));
    const during = (await Promise.all(checks)).reduce((n, d, i) => n + (d.allowed ? tokens(i + 5) : 0), 0);
    figures.push(`${name}, a burst read together, then paused: ${before} + ${during} tokens`);
    expect(before + during).toBeLessThanOrEqual(TOKENS);
    expect(during).toBeGreaterThan(0);
    await sleep(350);
  } finally {
    await limiter.close();
  }
});

describe('Redis down (the server stopped) from the first check', () => {
  let down: RedisProcess;
  let client: Redis;
  beforeAll(async () => {
    down = await spawnRedis();
    client = connect(down.url, { retryStrategy: () => 60_000 });
    await client.ping();
    await down.stop();
  });

  test.each(Object.keys(patterns))('%s: each unit admitted at most its limit, then denied locally', async (pattern) => {
    const limiter = limiterOn(client, 'plain', 50);
    try {
      const all = await flood(limiter, FLOOD, 0, patterns[pattern]);
      figures.push(`plain, ${pattern}, Redis down: ${show(all)}`);
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
    } finally {
      await limiter.close();
    }
  });
});
