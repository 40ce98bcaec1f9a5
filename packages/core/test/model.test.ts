import fc from 'fast-check';
import { createLimiter, type AlgorithmName, type Decision, type RedisClient, type RuleInput } from '@floodgate/core';
import { identifierKind } from '../src/scripts/keys';
import { closeClients, storeClient, uniquePrefix } from '@floodgate/testing';
import { onlyOptionsOf } from './fixtures/rule-options';

/*
 * The model check (issue 3): random sequences of checks, peeks, blocks and clock jumps run through the
 * Lua scripts on a real Redis (test clock) and through the JavaScript twins (memory store, same clock).
 * Every decision must be identical, and the admitted requests must keep each algorithm's guarantee (minus
 * the refunded ones; an identifier's requests before its reset no longer count toward it, and a refund
 * after the reset must give nothing back to it).
 * Large jumps outrun the memory store's padded TTLs but not Redis's real-time ones, so decisions that
 * rested on whether a key exists (DESIGN invariant 4) would differ between the two.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 200);
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob'];
const WINDOWS = [500, 1000, 2000, 3000];

type Op =
  | { op: 'check' | 'peek'; ids: string[]; cost: number }
  | { op: 'advance'; ms: number }
  | { op: 'align'; offset: number }
  | { op: 'block'; id: string; ms: number }
  | { op: 'unblock'; id: string }
  | { op: 'reset'; id: string }
  | { op: 'refund'; k: number };

interface Admitted {
  t: number;
  ids: string[];
  cost: number;
}

const ruleArb: fc.Arbitrary<RuleInput> = fc
  .record({
    limit: fc.integer({ min: 1, max: 6 }),
    window: fc.constantFrom(...WINDOWS),
    user: fc.boolean(),
    burst: fc.integer({ min: 1, max: 8 }),
    precision: fc.constantFrom(1, 2, 4, 5, 10),
  })
  .map(({ user, ...r }) => (user ? { ...r, for: 'user' } : r));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('check' as const),
      ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }),
      cost: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('peek' as const),
      ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }),
      cost: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 400 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1_000, max: 1_000_000 }) }) },
  // Just before or after the next 500 ms boundary: where windows and buckets turn over.
  { weight: 2, arbitrary: fc.record({ op: fc.constant('align' as const), offset: fc.integer({ min: -60, max: 60 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('block' as const), id: fc.constantFrom(...IDS), ms: fc.integer({ min: 1, max: 3_000 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unblock' as const), id: fc.constantFrom(...IDS) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), id: fc.constantFrom(...IDS) }) },
  // Gives back the k-th earlier decision (mod their number): admitted or not, refunded already or not.
  { weight: 2, arbitrary: fc.record({ op: fc.constant('refund' as const), k: fc.nat(40) }) },
);

// The clock stepping back (an NTP correction, a failover to a Redis whose clock is behind): only the
// twins' agreement is checked then, as the guarantees are stated for a clock that moves forward.
const backArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: opArb },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: -3_000, max: -1 }) }) },
);

const scenarioArb = fc.record({
  rules: fc.array(ruleArb, { minLength: 1, maxLength: 3 }),
  ops: fc.array(opArb, { minLength: 5, maxLength: 40 }),
  start: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
  // The refundable script (limiter.refund()) in a third of the runs; a refund op is a no-op without it.
  refunds: fc.constantFrom(false, false, true),
  // Escalating lockouts in a third of the runs.
  lockout: fc.option(
    fc.record({
      after: fc.integer({ min: 1, max: 3 }),
      within: fc.constantFrom(300, 1000, 5000),
      duration: fc.constantFrom(100, 700, 2000),
      backoff: fc.constantFrom(1, 1.5, 2, 3),
      maxDuration: fc.constantFrom(2000, 6000),
      // The kinds it may lock (only 'user' when every rule is for 'user': no rule applies to 'ip').
      scope: fc.constantFrom(['ip'], ['user'], ['ip', 'user']),
    }),
    { freq: 2 },
  ),
});

function comparable(d: Decision): Omit<Decision, 'source'> {
  const { source: _source, ...rest } = d;
  return rest;
}

/** Each (identifier x applicable rule) pair's admitted (time, cost) list. */
function pairs(rules: readonly RuleInput[], admitted: readonly Admitted[]): { rule: RuleInput; events: Admitted[] }[] {
  const out: { rule: RuleInput; events: Admitted[] }[] = [];
  for (const id of IDS) {
    for (const rule of rules) {
      if (rule.for !== undefined && rule.for !== identifierKind(id)) continue;
      out.push({ rule, events: admitted.filter((a) => a.ids.includes(id)) });
    }
  }
  return out;
}

/** The algorithm's promise, checked from the admitted requests alone. */
function assertGuarantee(algorithm: AlgorithmName, rules: readonly RuleInput[], admitted: readonly Admitted[]): void {
  for (const { rule, events } of pairs(rules, admitted)) {
    const w = rule.window as number;
    if (algorithm === 'fixed-window') {
      const perWindow = new Map<number, number>();
      for (const e of events) perWindow.set(Math.floor(e.t / w), (perWindow.get(Math.floor(e.t / w)) ?? 0) + e.cost);
      for (const n of perWindow.values()) expect(n).toBeLessThanOrEqual(rule.limit);
    } else if (algorithm === 'token-bucket') {
      // GCRA in exact BigInt ticks of 1/limit ms: every admitted cost must conform.
      const lim = BigInt(rule.limit);
      const T = BigInt(w);
      const tolerance = BigInt(rule.burst ?? rule.limit) * T;
      let tat = 0n;
      for (const e of events) {
        const t = BigInt(e.t) * lim;
        const base = tat > t ? tat : t;
        const next = base + BigInt(e.cost) * T;
        expect(next - t <= tolerance).toBe(true);
        tat = next;
      }
    } else {
      // Any window of length w: the fullest one ends at an admitted request.
      for (const last of events) {
        const inWindow = events.filter((e) => e.t > last.t - w && e.t <= last.t).reduce((s, e) => s + e.cost, 0);
        expect(inWindow).toBeLessThanOrEqual(rule.limit);
      }
    }
  }
}

let redis: RedisClient;
beforeAll(async () => {
  // The client under test (FLOODGATE_CLIENT, jest.config.ts).
  redis = await storeClient();
});
afterAll(closeClients);

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('model: %s', (algorithm) => {
  test.each([
    ['and the guarantee holds', scenarioArb, RUNS, true],
    [
      'also when the clock steps back',
      scenarioArb.chain((sc) => fc.array(backArb, { minLength: 5, maxLength: 40 }).map((ops) => ({ ...sc, ops }))),
      Math.ceil(RUNS / 4),
      false,
    ],
  ] as const)(
    `Redis and memory decide alike over random sequences, %s`,
    async (_name, arb, runs, guarantee) => {
      let replayed = 0;
      await fc.assert(
        fc.asyncProperty(arb, async ({ rules, ops, start, refunds, lockout }) => {
          let now = start;
          const clock = (): number => now;
          const common = {
            prefix: uniquePrefix('model'),
            algorithm,
            limits: onlyOptionsOf(algorithm, rules),
            clock,
            refunds,
            ...(lockout === null
              ? {}
              : { lockout: { ...lockout, scope: rules.every((r) => r.for === 'user') ? ['user'] : lockout.scope } }),
          };
          const onRedis = createLimiter({ ...common, redis, failure: 'closed', timeoutMs: 10_000, blockCache: false }); // the twins, not the cache
          const onMemory = createLimiter(common);
          const admitted: Admitted[] = [];
          // Every check's decisions, and what it admitted (removed from `admitted` once refunded).
          const decided: Array<{ r: Decision; m: Decision; admitted?: Admitted }> = [];
          try {
            for (const op of ops) {
              if (op.op === 'advance') now += op.ms;
              else if (op.op === 'align') now = Math.max(now, (Math.floor(now / 500) + 1) * 500 + op.offset);
              else if (op.op === 'block') {
                await onRedis.block(op.id, { duration: op.ms });
                await onMemory.block(op.id, { duration: op.ms });
              } else if (op.op === 'unblock') {
                await onRedis.unblock(op.id);
                await onMemory.unblock(op.id);
              } else if (op.op === 'reset') {
                await onRedis.reset(op.id);
                await onMemory.reset(op.id);
                // What it admitted before no longer counts toward it, refunded or not.
                for (const a of admitted) a.ids = a.ids.filter((id) => id !== op.id);
              } else if (op.op === 'refund') {
                if (decided.length === 0) continue;
                const d = decided[op.k % decided.length]!;
                const gave = await onRedis.refund(d.r);
                expect(await onMemory.refund(d.m)).toBe(gave);
                // Only an admitted check that consumed (some rule applied) of a refundable limiter gives back, once.
                expect(gave).toBe(refunds && d.admitted !== undefined && admitted.includes(d.admitted) && d.r.states.length > 0);
                if (gave) admitted.splice(admitted.indexOf(d.admitted!), 1);
              } else {
                const r = await onRedis[op.op](op.ids, { cost: op.cost });
                const m = await onMemory[op.op](op.ids, { cost: op.cost });
                expect(r.source).toBe('redis');
                expect(comparable(r)).toEqual(comparable(m));
                const entry = op.op === 'check' && r.allowed && op.cost > 0 ? { t: now, ids: [...op.ids], cost: op.cost } : undefined;
                if (entry) admitted.push(entry);
                decided.push({ r, m, admitted: entry });
              }
            }
            if (guarantee) assertGuarantee(algorithm, rules, admitted);
            replayed++;
          } finally {
            await onRedis.close();
            await onMemory.close();
          }
        }),
        { numRuns: runs },
      );
      expect(replayed).toBeGreaterThanOrEqual(runs);
    },
    240_000,
  );
});
