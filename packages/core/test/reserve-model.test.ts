import fc from 'fast-check';
import { createLimiter, type AlgorithmName, type Decision, type RedisClient, type Reservation, type RuleInput } from '@floodgate/core';
import { closeClients, storeClient, uniquePrefix } from '@floodgate/testing';
import { identifierKind } from '../src/scripts/keys';
import { onlyOptionsOf } from './fixtures/rule-options';

/*
 * The model check of reservations (docs/budgets.md): random sequences of reserve, settle, cancel, checks,
 * resets and clock jumps, with rules of two units (requests and tokens; sliding log: tokens alone), run
 * through the Lua scripts on a real Redis (test clock) and through the JavaScript twins (memory store,
 * same clock): every decision and every settle's and cancel's answer identical. For fixed window, whose
 * counts a model can follow exactly, every admitted estimate also fits beside what its window counted
 * (estimates admitted, minus what settles gave back, plus what they charged): reservations never overshoot.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 100);
const IDS = ['ip:10.0.0.1', 'user:alice', 'user:bob'];

type Op =
  | { op: 'reserve' | 'check'; ids: string[]; requests: number; tokens: number }
  | { op: 'settle'; k: number; requests: number; tokens: number }
  | { op: 'cancel'; k: number }
  | { op: 'advance'; ms: number }
  | { op: 'reset'; id: string };

const ruleArb = (unit: string | undefined): fc.Arbitrary<RuleInput> =>
  fc
    .record({
      limit: unit === undefined ? fc.integer({ min: 1, max: 5 }) : fc.integer({ min: 5, max: 40 }),
      window: fc.constantFrom(500, 1000, 2000),
      user: fc.boolean(),
      burst: fc.integer({ min: 5, max: 40 }),
      precision: fc.constantFrom(1, 2, 5, 10),
    })
    .map(({ user, ...r }) => ({ ...r, ...(user ? { for: 'user' } : {}), ...(unit === undefined ? {} : { unit }) }));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constantFrom('reserve' as const, 'reserve' as const, 'check' as const),
      ids: fc.subarray(IDS, { minLength: 1, maxLength: 2 }),
      requests: fc.integer({ min: 0, max: 2 }),
      tokens: fc.integer({ min: 0, max: 12 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      k: fc.nat(30),
      requests: fc.integer({ min: 0, max: 3 }),
      tokens: fc.integer({ min: 0, max: 30 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), k: fc.nat(30) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 700 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), id: fc.constantFrom(...IDS) }) },
);

const comparable = ({ source: _source, ...rest }: Decision): Omit<Decision, 'source'> => rest;

/** Fixed window, followed exactly: per identifier, per rule, per window index, the units counted. */
class FixedWindowModel {
  private readonly counts = new Map<string, number>();
  /** Per identifier, its key's life: a reset starts another, where older give-backs apply no more. */
  private readonly life = new Map<string, number>();

  constructor(private readonly rules: readonly RuleInput[]) {}

  private applies(id: string): RuleInput[] {
    return this.rules.filter((r) => r.for === undefined || r.for === identifierKind(id));
  }

  private key(id: string, r: RuleInput, t: number): string {
    return `${id}|${r.window}|${r.unit ?? 'requests'}|${Math.floor(t / (r.window as number))}|${this.life.get(id) ?? 0}`;
  }

  /** An admitted estimate: each unit's cost must have fitted beside every count of its windows. */
  admit(ids: readonly string[], costs: Record<string, number>, t: number): void {
    for (const id of ids) {
      for (const r of this.applies(id)) {
        const unit = r.unit ?? 'requests';
        // A check's cost of 0 always fits (a reservation counts at least 1).
        if (costs[unit] === 0) continue;
        expect((this.counts.get(this.key(id, r, t)) ?? 0) + costs[unit]!).toBeLessThanOrEqual(r.limit);
      }
    }
    this.add(ids, costs, t, 1);
  }

  add(ids: readonly string[], costs: Record<string, number>, t: number, sign: number, life?: ReadonlyMap<string, number>): void {
    for (const id of ids) {
      if (life !== undefined && life.get(id) !== (this.life.get(id) ?? 0)) continue;
      // Fields shared by two rules (one window and unit) are counted once.
      const seen = new Set<string>();
      for (const r of this.applies(id)) {
        const k = this.key(id, r, t);
        if (seen.has(k)) continue;
        seen.add(k);
        this.counts.set(k, Math.max((this.counts.get(k) ?? 0) + sign * costs[r.unit ?? 'requests']!, 0));
      }
    }
  }

  lifeOf(ids: readonly string[]): Map<string, number> {
    return new Map(ids.map((id) => [id, this.life.get(id) ?? 0]));
  }

  reset(id: string): void {
    this.life.set(id, (this.life.get(id) ?? 0) + 1);
  }
}

let redis: RedisClient;
beforeAll(async () => {
  redis = await storeClient();
});
afterAll(closeClients);

interface Held {
  r: Reservation;
  m: Reservation;
  ids: string[];
  t: number;
  costs: Record<string, number>;
  life: Map<string, number>;
}

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('reservations: %s', (algorithm) => {
  test('Redis and memory decide and settle alike over random sequences', async () => {
    let replayed = 0;
    const log = algorithm === 'sliding-log';
    const scenario = fc.record({
      requests: log ? fc.constant([]) : fc.array(ruleArb(undefined), { minLength: 1, maxLength: 2 }),
      tokens: fc.array(ruleArb('tokens'), { minLength: 1, maxLength: 2 }),
      ops: fc.array(opArb, { minLength: 5, maxLength: 40 }),
      start: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async ({ requests, tokens, ops, start }) => {
        let now = start;
        const rules = [...requests, ...tokens];
        const common = {
          prefix: uniquePrefix('rmodel'),
          algorithm,
          limits: onlyOptionsOf(algorithm, rules),
          clock: () => now,
          refunds: true,
        };
        const onRedis = createLimiter({ ...common, redis, failure: 'closed', timeoutMs: 10_000, blockCache: false });
        const onMemory = createLimiter(common);
        const model = algorithm === 'fixed-window' ? new FixedWindowModel(rules) : undefined;
        const costOf = (op: { requests: number; tokens: number }): Record<string, number> =>
          log ? { tokens: op.tokens } : { requests: op.requests, tokens: op.tokens };
        const held: Held[] = [];
        try {
          for (const op of ops) {
            if (op.op === 'advance') now += op.ms;
            else if (op.op === 'reset') {
              await onRedis.reset(op.id);
              await onMemory.reset(op.id);
              model?.reset(op.id);
            } else if (op.op === 'check') {
              const cost = costOf(op);
              const r = await onRedis.check(op.ids, { cost });
              expect(comparable(r)).toEqual(comparable(await onMemory.check(op.ids, { cost })));
              if (r.allowed) model?.admit(op.ids, cost, now);
            } else if (op.op === 'reserve') {
              const cost = costOf(op);
              const r = await onRedis.reserve(op.ids, { cost });
              const m = await onMemory.reserve(op.ids, { cost });
              expect(comparable(r.decision)).toEqual(comparable(m.decision));
              // A reservation counts at least 1 of every unit (a unit at its limit denies an estimate of 0).
              const counted = Object.fromEntries(Object.entries(cost).map(([u, n]) => [u, Math.max(n, 1)]));
              if (r.decision.allowed) model?.admit(op.ids, counted, now);
              held.push({ r, m, ids: op.ids, t: now, costs: counted, life: model?.lifeOf(op.ids) ?? new Map() });
            } else if (held.length > 0 && (op.op === 'settle' || op.op === 'cancel')) {
              const h = held[op.k % held.length]!;
              if (op.op === 'cancel') {
                const gave = await h.r.cancel();
                expect(await h.m.cancel()).toBe(gave);
                if (gave) model?.add(h.ids, h.costs, h.t, -1, h.life);
              } else {
                const actual = costOf(op);
                const settled = await h.r.settle(actual);
                expect(await h.m.settle(actual)).toBe(settled);
                if (settled && model) {
                  const give = Object.fromEntries(Object.keys(actual).map((u) => [u, Math.max(h.costs[u]! - actual[u]!, 0)]));
                  const charge = Object.fromEntries(Object.keys(actual).map((u) => [u, Math.max(actual[u]! - h.costs[u]!, 0)]));
                  model.add(h.ids, give, h.t, -1, h.life);
                  model.add(h.ids, charge, now, 1);
                }
              }
            }
          }
          replayed++;
        } finally {
          await onRedis.close();
          await onMemory.close();
        }
      }),
      { numRuns: RUNS },
    );
    expect(replayed).toBeGreaterThanOrEqual(RUNS);
  }, 240_000);
});
