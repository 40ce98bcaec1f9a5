import { ArgumentError, ConfigError, createLimiter, type AlgorithmName, type Limiter, type RedisClient } from '@floodgate/core';
import { closeClients, storeClient, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

/*
 * Units per rule (docs/budgets.md): a rule says what it counts, a check gives a cost per unit or one number
 * for every rule, and one check stays one script call over every rule and identifier; on Redis and in
 * memory alike.
 */
let redis: RedisClient;
beforeAll(async () => {
  redis = await storeClient();
});
afterAll(closeClients);

const T0 = 1_700_000_000_000;
const RULES = [
  { limit: 3, window: '1m' },
  { limit: 1_000, window: '1m', unit: 'tokens' },
];

function both(algorithm: AlgorithmName, options: { refunds?: boolean } = {}): { name: string; limiter: Limiter }[] {
  const common = { algorithm, limits: RULES, clock: () => T0, ...options };
  return [
    {
      name: 'redis',
      limiter: createLimiter({ ...TEST_DEADLINE, ...common, prefix: uniquePrefix('units'), redis, failure: 'closed', blockCache: false }),
    },
    { name: 'memory', limiter: createLimiter({ ...common, prefix: uniquePrefix('units') }) },
  ];
}

describe('a rule names what it counts', () => {
  test('a unit that is not a name, and rules of several units under sliding-log, are ConfigErrors naming the option', () => {
    expect(() => createLimiter({ limits: { limit: 1, window: '1m', unit: 'to kens' } })).toThrow(ConfigError);
    expect(() => createLimiter({ limits: { limit: 1, window: '1m', unit: 'to kens' } })).toThrow(/limits\[0\]\.unit/);
    expect(() => createLimiter({ algorithm: 'sliding-log', limits: RULES })).toThrow(/'sliding-log' counts one unit/);
    // One unit of any name is fine for sliding-log.
    expect(createLimiter({ algorithm: 'sliding-log', limits: { limit: 100, window: '1m', unit: 'tokens' } }).rules[0]!.unit).toBe('tokens');
  });

  test("a cost naming a unit no rule counts, or leaving out one the plan's rules count, is an ArgumentError naming it", async () => {
    const limiter = createLimiter({ limits: RULES, prefix: uniquePrefix('units') });
    await expect(limiter.check('user:1', { cost: { requests: 1, tokens: 5, bytes: 1 } })).rejects.toThrow(ArgumentError);
    await expect(limiter.check('user:1', { cost: { requests: 1, tokens: 5, bytes: 1 } })).rejects.toThrow(/'bytes'/);
    await expect(limiter.check('user:1', { cost: { requests: 1 } })).rejects.toThrow(/leaves out the unit 'tokens'/);
    await expect(limiter.check('user:1', { cost: { requests: 1, tokens: -1 } })).rejects.toThrow(/cost\.tokens/);
    // Cost 0 of a unit is allowed.
    expect((await limiter.check('user:1', { cost: { requests: 1, tokens: 0 } })).allowed).toBe(true);
  });
});

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'token-bucket'])('%s: requests and tokens in one check', (algorithm) => {
  test.each(['redis', 'memory'])('on %s, each rule is charged its own unit, and the binding unit denies', async (where) => {
    const { limiter } = both(algorithm).find((l) => l.name === where)!;
    try {
      const a = await limiter.check('user:1', { cost: { requests: 1, tokens: 400 } });
      expect(a.allowed).toBe(true);
      expect(a.costs).toEqual({ requests: 1, tokens: 400 });
      expect(a.states.map((s) => [s.unit ?? 'requests', s.remaining])).toEqual([
        ['requests', 2],
        ['tokens', 600],
      ]);
      expect((await limiter.check('user:1', { cost: { requests: 1, tokens: 400 } })).allowed).toBe(true);
      // 800 tokens counted: 400 more do not fit, the request would.
      const denied = await limiter.check('user:1', { cost: { requests: 1, tokens: 400 } });
      expect(denied.allowed).toBe(false);
      expect(denied.states.find((s) => !s.allowed)!.unit).toBe('tokens');
      // The decision's cost is in the binding pair's unit.
      expect(denied.cost).toBe(400);
      // Nothing was counted by the denial: the third request fits with tokens to spare.
      expect((await limiter.check('user:1', { cost: { requests: 1, tokens: 200 } })).allowed).toBe(true);
      // One number is every rule's cost: 1 request and 1 token; the requests are used up.
      expect((await limiter.check('user:1', { cost: 1 })).allowed).toBe(false);
    } finally {
      await limiter.close();
    }
  });

  test.each(['redis', 'memory'])('on %s, refund() gives each unit back', async (where) => {
    const { limiter } = both(algorithm, { refunds: true }).find((l) => l.name === where)!;
    try {
      const a = await limiter.check('user:1', { cost: { requests: 1, tokens: 900 } });
      expect((await limiter.check('user:1', { cost: { requests: 1, tokens: 200 } })).allowed).toBe(false);
      expect(await limiter.refund(a)).toBe(true);
      const after = await limiter.peek('user:1', { cost: { requests: 1, tokens: 200 } });
      expect(after.states.map((s) => s.remaining)).toEqual([3, 1_000]);
    } finally {
      await limiter.close();
    }
  });
});

test('a rule set of one unit, whatever its name, takes one number per check', async () => {
  const limiter = createLimiter({
    ...TEST_DEADLINE,
    limits: { limit: 10, window: '1m', unit: 'tokens' },
    prefix: uniquePrefix('units'),
    redis,
    failure: 'closed',
  });
  try {
    expect((await limiter.check('user:1', { cost: 7 })).remaining).toBe(3);
    expect((await limiter.check('user:1', { cost: { tokens: 3 } })).remaining).toBe(0);
    await expect(limiter.check('user:1', { cost: { requests: 1, tokens: 1 } })).rejects.toThrow(/'requests'/);
  } finally {
    await limiter.close();
  }
});
