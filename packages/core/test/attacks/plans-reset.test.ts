import { createLimiter, type AlgorithmName, type Decision, type Limiter, type LimiterOptions } from '@floodgate/core';
import { manualClock } from '@floodgate/core/testing';
import { keySlot } from '../../src/scripts/keys';
import { closeClients, connect, keysUnder, uniquePrefix, useCluster, windowClearOfBoundary } from '@floodgate/testing';

/*
 * docs/security.md, "Plans that forget counts" and "A refund after a reset". Each test failed before its fix:
 *   - a client that toggles its plan on every request (signing in and out) got a fresh budget on each switch
 *     (fixed window dropped the fields only the other plan has), or after a pause (a save under a plan with
 *     shorter windows shortened the key's life; sliding log trimmed to the smaller limit);
 *   - a decision taken before reset() and refunded after it gave a unit back to the new window.
 */
afterAll(closeClients);

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];
const STORES = ['redis', 'memory'] as const;
type StoreKind = (typeof STORES)[number];
const CLIENT = '203.0.113.9';

/** Anonymous requests get 5 an hour; members have another window (and, in the second set, a smaller limit). */
const PLAN_SETS = {
  'a member plan with a larger limit': { anon: [{ limit: 5, window: '1h' }], member: [{ limit: 100, window: '1m' }] },
  'a member plan with a smaller limit and a shorter window': { anon: [{ limit: 5, window: '1h' }], member: [{ limit: 2, window: '1s' }] },
};

/** Ten minutes into an hour, held still: the anonymous hour of a fixed window never turns during a test. */
const STILL = Date.UTC(2031, 0, 1, 0, 10);

function limiter(store: StoreKind, options: Partial<LimiterOptions>, redis = connect()): Limiter {
  return createLimiter({
    prefix: uniquePrefix('plans-reset'),
    blockCache: false,
    limits: PLAN_SETS['a member plan with a larger limit'],
    clock: () => STILL,
    // `failure` and `timeoutMs` are a Redis store's options: the memory store cannot fail.
    ...(store === 'redis' ? { redis, failure: 'closed' as const, timeoutMs: 5_000 } : {}),
    ...options,
  });
}

/** `n` checks of one client whose plan toggles on every request; admissions per plan. */
async function toggling(limiters: Limiter[], n: number): Promise<{ anon: number; member: number }> {
  const admitted = { anon: 0, member: 0 };
  for (let i = 0; i < n; i++) {
    const plan = i % 2 === 0 ? 'anon' : 'member';
    if ((await limiters[i % limiters.length]!.check(`ip:${CLIENT}`, { plan })).allowed) admitted[plan]++;
  }
  return admitted;
}

/** 5 anonymous admissions of 5 an hour; sliding log's one log also counts the member's entries toward it. */
function expectFiveAnonymous(algorithm: AlgorithmName, anon: number): void {
  if (algorithm === 'sliding-log') expect(anon).toBeLessThanOrEqual(5);
  else expect(anon).toBe(5);
}

describe('plans: switching plans never forgets a count', () => {
  /*
   * 5 anonymous requests, a second, one member request (its plan: 2 a second), then the anonymous plan
   * again once the member's second has passed: on a test clock, which is what the windows read; the life
   * Redis gives the key (its TTL, in real time) is read with PTTL rather than waited out.
   */
  test.each(STORES)('on %s: a check under a plan with a shorter window and a smaller limit forgets nothing', async (store) => {
    const redis = connect();
    const after = await Promise.all(
      ALGORITHMS.map(async (algorithm) => {
        const clock = manualClock();
        const l = limiter(
          store,
          { algorithm, limits: PLAN_SETS['a member plan with a smaller limit and a shorter window'], clock: clock.now },
          redis,
        );
        const check = async (plan: string): Promise<boolean> => (await l.check(`ip:${CLIENT}`, { plan })).allowed;
        for (let i = 0; i < 5; i++) expect(await check('anon')).toBe(true);
        clock.advance(1_100);
        expect(await check('member')).toBe(true);
        // Every key of the client still lives the anonymous hour (less the 1.1 s gone by); the test clock's
        // padding (10 minutes) comes on top: a key cut to the member's second would live 601 s.
        const lives = store === 'memory' ? [] : await Promise.all((await keysUnder(redis, l.prefix)).map((k) => redis.pttl(k)));
        clock.advance(1_600);
        const anon = [await check('anon'), await check('anon'), await check('anon')];
        await l.close();
        return [algorithm, { anon, shortest: Math.min(...lives) >= 3_600_000 - 1_100 }] as const;
      }),
    );
    // Before: every algorithm admitted all three. Fixed window had dropped the hour's field; sliding window
    // and token bucket let the key expire with the member's second; sliding log did too, and had trimmed
    // the log to the member's 2 entries.
    expect(Object.fromEntries(after)).toEqual(
      Object.fromEntries(ALGORITHMS.map((a) => [a, { anon: [false, false, false], shortest: true }])),
    );
  });

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    describe.each(Object.entries(PLAN_SETS))('%s', (_set, limits) => {
      test.each(STORES)('on %s: 300 requests toggling the plan, block cache off: 5 anonymous ones admitted', async (store) => {
        const l = limiter(store, { algorithm, limits });
        const { anon } = await toggling([l], 300);
        // Before (fixed window): 150 of 150, each member check dropped the hour's field.
        expectFiveAnonymous(algorithm, anon);
        await l.close();
      });
    });

    test('a fleet of 4 limiters sharing Redis, the plan toggling per request: 5 anonymous ones admitted', async () => {
      const prefix = uniquePrefix('plans-fleet');
      const fleet = Array.from({ length: 4 }, () => limiter('redis', { algorithm, prefix, name: 'fleet' }));
      const { anon, member } = await toggling(fleet, 300);
      // Before (fixed window): 150.
      expectFiveAnonymous(algorithm, anon);
      // Members have their own minute: at most its 100 (token bucket refills one per 600 ms on top).
      expect(member).toBeLessThanOrEqual(algorithm === 'token-bucket' ? 110 : 100);
      await Promise.all(fleet.map((l) => l.close()));
    });
  });
});

/**
 * Takes 5 in a window of 5, resets the identifier, then alternates a new check with a refund of one of the
 * old decisions, and checks on until denied: the admissions after the reset.
 */
async function refundAfterReset(l: Limiter, ids: string | string[]): Promise<number> {
  const old: Decision[] = [];
  for (let i = 0; i < 5; i++) old.push(await l.check(ids));
  expect(old.every((d) => d.allowed)).toBe(true);
  await l.reset(ids);
  let admitted = 0;
  for (const d of old) {
    if ((await l.check(ids)).allowed) admitted++;
    // Sent (the decision was admitted and consumed): whether it gives anything back is the store's answer.
    expect(await l.refund(d)).toBe(true);
  }
  for (let i = 0; i < 10; i++) if ((await l.check(ids)).allowed) admitted++;
  return admitted;
}

describe('refunds: a decision taken before a reset gives nothing back to the new window', () => {
  describe.each(ALGORITHMS)('%s', (algorithm) => {
    const refundable = { algorithm, refunds: true, limits: { limit: 5, window: '1h' } };

    test.each(STORES)('on %s, one test clock (every check in one millisecond): 5 admitted after the reset', async (store) => {
      const l = limiter(store, refundable);
      // Before: fixed and sliding window 10, sliding log 10, token bucket 6 (its first receipt matched the new TAT).
      expect(await refundAfterReset(l, `ip:${CLIENT}`)).toBe(5);
      await l.close();
    });

    test.each(STORES)('on %s, real time (Redis TIME): 5 admitted after the reset', async (store) => {
      // A fixed window's hour that began minutes ago: one ending mid-test would admit 5 more, reset or not.
      const window = algorithm === 'fixed-window' ? windowClearOfBoundary(Date.now()) : '1h';
      const l = limiter(store, { ...refundable, limits: { limit: 5, window }, clock: undefined });
      // Before: fixed and sliding window 10.
      expect(await refundAfterReset(l, [`ip:${CLIENT}`, 'user:42'])).toBe(5);
      await l.close();
    });
  });
});

describe('on a Redis Cluster', () => {
  const cluster = useCluster();

  // Two identifiers in two slots: each check is split, its receipts come from the split script.
  const split = [`ip:${CLIENT}`, 'user:42'];
  test('the identifiers of the check are in two slots', () => {
    expect(keySlot(`{${split[0]}}`)).not.toBe(keySlot(`{${split[1]}}`));
  });

  test.each(ALGORITHMS)('%s: refunds after a reset give nothing back (split and single-slot checks)', async (algorithm) => {
    for (const ids of [split, `ip:${CLIENT}`]) {
      const l = createLimiter({
        redis: cluster.client,
        prefix: uniquePrefix('plans-reset-cluster'),
        algorithm,
        refunds: true,
        blockCache: false,
        failure: 'closed',
        timeoutMs: 5_000,
        clock: () => STILL,
        limits: { limit: 5, window: '1h' },
      });
      expect(await refundAfterReset(l, ids)).toBe(5);
      await l.close();
    }
  });

  test.each(ALGORITHMS)('%s: toggling plans on split checks admits 5 anonymous ones', async (algorithm) => {
    const l = createLimiter({
      redis: cluster.client,
      prefix: uniquePrefix('plans-cluster'),
      algorithm,
      blockCache: false,
      failure: 'closed',
      timeoutMs: 5_000,
      clock: () => STILL,
      limits: PLAN_SETS['a member plan with a smaller limit and a shorter window'],
    });
    let anon = 0;
    for (let i = 0; i < 100; i++) {
      const plan = i % 2 === 0 ? 'anon' : 'member';
      if ((await l.check(split, { plan })).allowed && plan === 'anon') anon++;
    }
    expectFiveAnonymous(algorithm, anon);
    await l.close();
  });
});
