import { ArgumentError, ConfigError, createLimiter, type AlgorithmName, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

/*
 * Plans (issue 14): `limits` names rule sets, each check picks one (the first by default), each plan's
 * script is built at construction, and the counts of the windows two plans share carry over when a client
 * moves between them.
 */
afterAll(closeClients);
const redis = connect();

const PLANS = {
  free: [{ limit: 2, window: '1m' }],
  pro: [
    { limit: 5, window: '1m' },
    { limit: 100, window: '1h' },
  ],
};

function limiter(store: 'redis' | 'memory', options: Partial<LimiterOptions> = {}) {
  return createLimiter({
    prefix: uniquePrefix('plan'),
    limits: PLANS,
    // `failure` and `timeoutMs` are a Redis store's options: the memory store cannot fail.
    ...(store === 'redis' ? { redis, failure: 'closed' as const, ...TEST_DEADLINE } : {}),
    ...options,
  });
}

describe.each(['redis', 'memory'] as const)('on %s', (store) => {
  test('each check runs under its plan; the first plan is the default', async () => {
    const l = limiter(store);
    expect(l.plans).toEqual(['free', 'pro']);
    expect(l.rules).toBe(l.rulesOf('free'));
    expect(l.rulesOf('pro').map((r) => r.limit)).toEqual([5, 100]);
    expect((await l.check('user:a')).limit).toBe(2);
    expect((await l.check('user:a')).allowed).toBe(true);
    expect((await l.check('user:a')).allowed).toBe(false);
    const pro = await l.check('user:b', { plan: 'pro' });
    expect(pro.states.map((s) => [s.limit, s.remaining])).toEqual([
      [5, 4],
      [100, 99],
    ]);
    await l.close();
  });

  test.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log'])(
    '%s: moving between plans keeps the counts of the windows both have',
    async (algorithm) => {
      const l = limiter(store, { algorithm });
      await l.check('user:a', { plan: 'pro' });
      await l.check('user:a', { plan: 'pro' });
      // An upgrade (or a downgrade) mid-window: the 1-minute window's 2 units come along.
      const free = await l.check('user:a', { plan: 'free' });
      expect(free.allowed).toBe(false);
      const pro = await l.peek('user:a', { plan: 'pro' });
      expect(pro.states[0]!.remaining).toBe(3);
      await l.close();
    },
  );

  test('a denial cached under one plan does not deny another plan', async () => {
    const l = limiter(store);
    await l.check('user:a');
    await l.check('user:a');
    expect((await l.check('user:a')).allowed).toBe(false);
    expect((await l.check('user:a')).allowed).toBe(false);
    const upgraded = await l.check('user:a', { plan: 'pro' });
    expect(upgraded.allowed).toBe(true);
    expect(upgraded.source).toBe(store);
    await l.close();
  });

  test('an unknown plan is an ArgumentError naming the known plans; nothing is counted', async () => {
    const l = limiter(store);
    for (const bad of ['enterprise', '__proto__', 'constructor', '', 7, null]) {
      await expect(l.check('user:a', { plan: bad as string })).rejects.toThrow(ArgumentError);
    }
    await expect(l.check('user:a', { plan: 'gold' })).rejects.toThrow(/unknown plan "gold" \(known: free, pro\)/);
    expect(() => l.rulesOf('gold')).toThrow(ArgumentError);
    expect((await l.peek('user:a')).remaining).toBe(2);
    const plain = limiter(store, { limits: { limit: 2, window: '1m' } });
    expect(plain.plans).toEqual([]);
    await expect(plain.check('user:a', { plan: 'free' })).rejects.toThrow(/names no plans/);
    await l.close();
    await plain.close();
  });
});

test('refunds go back to the windows of the plan they were taken under', async () => {
  const l = limiter('redis', { refunds: true });
  const d = await l.check('user:a', { plan: 'pro' });
  expect(await l.refund(d)).toBe(true);
  const pro = await l.peek('user:a', { plan: 'pro' });
  expect(pro.states.map((s) => s.remaining)).toEqual([5, 100]);
  await l.close();
});

describe('bad plans fail at construction, naming the option', () => {
  test.each([
    [{ free: [{ limit: 0, window: '1m' }] }, 'limits.free[0].limit'],
    [{ free: [{ limit: 1, window: '1m' }], pro: [] }, 'limits.pro'],
    [{ 'a b': [{ limit: 1, window: '1m' }] }, 'limits.a b'],
    [{ free: [{ limit: 1, window: '1m', burst: 2 }] }, 'limits.free[0].burst'],
  ])('%j', (limits, option) => {
    let error: unknown;
    try {
      createLimiter({ prefix: uniquePrefix('bad'), limits: limits as LimiterOptions['limits'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ option });
  });

  test('a plan name from a peer option is still caught as a rule mistake', () => {
    expect(() => createLimiter({ limits: { max: 5, windowMs: 60_000 } as unknown as LimiterOptions['limits'] })).toThrow(/windowMs|max/);
  });

  test('two limiters with one name must have the same plans', () => {
    const prefix = uniquePrefix('reg');
    const a = createLimiter({ prefix, limits: PLANS });
    expect(() => createLimiter({ prefix, limits: { ...PLANS, free: [{ limit: 3, window: '1m' }] } })).toThrow(ConfigError);
    const same = createLimiter({ prefix, limits: PLANS });
    void a.close();
    void same.close();
  });
});
