import fc from 'fast-check';
import type { AlgorithmName, LimiterOptions, RuleInput } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { identifierKind } from '../src/scripts/keys';
import { resolveOptions } from '../src/engine/options';
import { compileScript, ruleMask } from '../src/scripts/compiler';
import { ruleParams, runFrame } from '../src/scripts/frame';
import { settleArgs, runSettle } from '../src/scripts/settle';
import { newIncarnation } from '../src/scripts/incarnation';
import { giveCostArg } from '../src/scripts/units';
import { unitsOf } from '../src/config/rules';
import type { Algorithm } from '../src/scripts/types';
import { Forever } from './fixtures/forever-storage';
import { onlyOptionsOf } from './fixtures/rule-options';
import { encode, stored } from './fixtures/stored-bytes';

/*
 * Units (docs/budgets.md) and the settle script, against the JavaScript twins on the real Redis: random rule
 * sets whose rules count one to three units, random checks with a cost per unit (ARGV[2] '1:0:7'), with
 * and without penalty, and
 * settles of earlier admitted checks at a random actual cost (a give-back of part of the estimate and a
 * charge past it, per unit, in one call): every reply identical, every state key holding exactly the bytes
 * the twin's state encodes to. The refundable script throughout: a settle gives back from its receipts.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 100);
const IDS = ['ip:10.0.0.1', 'user:alice', 'user:bob', 'key:k1'];
const PAD = 600_000;
const UNITS = [undefined, 'tokens', 'bytes'] as const;

const redis = connect();
afterAll(closeClients);

const ruleArb = (oneUnit: boolean): fc.Arbitrary<RuleInput> =>
  fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.constantFrom(500, 1000, 2000),
      kind: fc.constantFrom(undefined, undefined, 'user', 'key'),
      burst: fc.integer({ min: 1, max: 14 }),
      precision: fc.constantFrom(1, 2, 5, 10),
      unit: oneUnit ? fc.constant(undefined) : fc.constantFrom(...UNITS),
    })
    .map(({ kind, unit, ...r }) => ({ ...r, ...(kind === undefined ? {} : { for: kind }), ...(unit === undefined ? {} : { unit }) }));

type Op =
  | { op: 'c'; ids: string[]; costs: number[]; penalty: boolean }
  | { op: 'settle'; pick: number; actual: number[] }
  | { op: 'advance'; ms: number }
  | { op: 'reset'; id: string };

const costsArb = fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 3, maxLength: 3 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('c' as const),
      ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }),
      costs: costsArb,
      penalty: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      pick: fc.nat(),
      actual: fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 3, maxLength: 3 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: -300, max: 900 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), id: fc.constantFrom(...IDS) }) },
);

/** An admitted check, for a settle: its identifiers' state keys, masks and receipts, and its cost per unit. */
interface Held {
  keys: string[];
  masks: string[];
  receipts: string[];
  costs: number[];
}

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('%s with units', (algorithm) => {
  test('checks with a cost per unit and settles answer and store exactly what the JavaScript twins do', async () => {
    let replayed = 0;
    // Sliding log keeps one log for every rule: one unit (a limiter of several is refused), of any name.
    const oneUnit = algorithm === 'sliding-log';
    await fc.assert(
      fc.asyncProperty(
        fc.array(ruleArb(oneUnit), { minLength: 1, maxLength: 8 }),
        fc.constantFrom(...UNITS),
        fc.array(opArb, { minLength: 5, maxLength: 30 }),
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        async (raw, logUnit, ops, start) => {
          const limits = oneUnit && logUnit !== undefined ? raw.map((r) => ({ ...r, unit: logUnit })) : raw;
          const opts = resolveOptions({ algorithm, limits: onlyOptionsOf(algorithm, limits) } as LimiterOptions);
          const alg = opts.algorithm as Algorithm;
          const units = unitsOf(opts.rules);
          const check = compileScript(alg, opts.rules, 'refundable');
          const settle = compileScript(alg, opts.rules, 'settle');
          const params = ruleParams(opts.rules, alg);
          const mask = (id: string): string => ruleMask(opts.rules, identifierKind(id));
          const costArg = (costs: readonly number[]): string | number =>
            units.length === 1 ? costs[0]! : costs.slice(0, units.length).join(':');
          const prefix = uniquePrefix('units');
          const twin = new Forever();
          const stateKey = (id: string): string => `${prefix}:s:${id}`;
          const held: Held[] = [];
          let now = start;
          const same = async (keys: string[]): Promise<void> => {
            for (const key of keys) {
              const expected = twin.get(key);
              expect((await stored(redis, algorithm, key)).value).toEqual(expected === undefined ? undefined : encode(algorithm, expected));
            }
          };
          for (const op of ops) {
            if (op.op === 'advance') now += op.ms;
            else if (op.op === 'reset') {
              await redis.del(stateKey(op.id));
              twin.map.delete(stateKey(op.id));
            } else if (op.op === 'c') {
              const keys = op.ids.flatMap((id) => [stateKey(id), `${prefix}:b:${id}`]);
              const argv = ['c', costArg(op.costs), op.penalty ? '1' : '0', String(now), PAD, ...op.ids.map(mask), newIncarnation()];
              const lua = (await redis.eval(check, keys.length, ...keys, ...argv)) as (string | number)[];
              const js = runFrame(alg.twin, params, twin, keys, argv, now, { receipts: alg.undo.twin });
              expect(lua).toEqual(js);
              await same(op.ids.map(stateKey));
              if (js[2] === 1 && js[1] === 1) {
                const receipts = js.slice(js.length - op.ids.length).map(String);
                const h: Held = { keys: [], masks: [], receipts: [], costs: op.costs.slice(0, units.length) };
                op.ids.forEach((id, i) => {
                  if (receipts[i] === '') return;
                  h.keys.push(stateKey(id));
                  h.masks.push(mask(id));
                  h.receipts.push(receipts[i]!);
                });
                if (h.keys.length > 0) held.push(h);
              }
            } else if (held.length > 0) {
              // Each admitted check is settled at most once.
              const [h] = held.splice(op.pick % held.length, 1);
              const give = h!.costs.map((c, k) => Math.max(c - op.actual[k]!, 0));
              const charge = h!.costs.map((c, k) => Math.max(op.actual[k]! - c, 0));
              const giveArg = units.length === 1 ? give[0]! : giveCostArg(Object.fromEntries(units.map((u, k) => [u, give[k]!])));
              const argv = settleArgs(alg, opts.rules, giveArg, costArg(charge), String(now), PAD, newIncarnation(), h!.masks, h!.receipts);
              expect(await redis.eval(settle, h!.keys.length, ...h!.keys, ...argv)).toBe(runSettle(alg, twin, h!.keys, argv, now));
              await same(h!.keys);
            }
          }
          replayed++;
        },
      ),
      { numRuns: RUNS },
    );
    expect(replayed).toBeGreaterThanOrEqual(RUNS);
  }, 240_000);
});
