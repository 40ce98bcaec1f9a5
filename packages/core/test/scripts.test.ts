import fc from 'fast-check';
import { type AlgorithmName, type LimiterOptions, type RuleInput } from '@floodgate/core';
import { identifierKind } from '../src/scripts/keys';
import { resolveOptions } from '../src/engine/options';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { compileScript, ruleMask, ruleMasks } from '../src/scripts/compiler';
import { ruleParams, runFrame } from '../src/scripts/frame';
import { newIncarnation } from '../src/scripts/incarnation';
import { Forever } from './fixtures/forever-storage';
import type { Algorithm } from '../src/scripts/types';
import { onlyOptionsOf } from './fixtures/rule-options';
import { encode, stored } from './fixtures/stored-bytes';

/*
 * The generated scripts (scripts/compiler/) against the algorithms' JavaScript twins (the independent
 * model), on the real Redis, over random rule sets of 1 to 32 rules with `for` scopes and random call
 * sequences: every reply identical, and every state key holding exactly the bytes the twin's state
 * encodes to. (The model test ties limiters on Redis and in memory together through the public API;
 * this one looks at the bytes.) Half the runs use the refundable script, which answers receipts and gives
 * keys incarnations (every call brings one, as a limiter's do), and keys are reset (deleted) now and then.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 150);
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob', 'key:k1'];
const PAD = 600_000;

const redis = connect();
afterAll(closeClients);

/** Rules of limits up to `maxLimit`. */
const rulesOf = (maxLimit: number): fc.Arbitrary<RuleInput> =>
  fc
    .record({
      limit: fc.integer({ min: 1, max: maxLimit }),
      window: fc.constantFrom(500, 1000, 2000, 3000),
      kind: fc.constantFrom(undefined, undefined, 'user', 'key'),
      burst: fc.integer({ min: 1, max: 8 }),
      precision: fc.constantFrom(1, 2, 4, 5, 10),
    })
    .map(({ kind, ...r }) => (kind === undefined ? r : { ...r, for: kind }));

type Op =
  | { op: 'c' | 'p'; ids: string[]; cost: number; penalty: boolean }
  | { op: 'advance'; ms: number }
  | { op: 'block'; id: string; ms: number }
  | { op: 'reset'; id: string }
  | { op: 'swap' };

/** Calls of costs up to `maxCost`, clock steps, blocks, rule swaps and resets. */
const opsOf = (maxCost: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record({
        op: fc.constantFrom('c' as const, 'c' as const, 'p' as const),
        ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }),
        cost: fc.integer({ min: 0, max: maxCost }),
        penalty: fc.boolean(),
      }),
    },
    { weight: 5, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: -700, max: 900 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1_000, max: 100_000 }) }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('block' as const), id: fc.constantFrom(...IDS), ms: fc.integer({ min: 1, max: 3_000 }) }),
    },
    // The limiter's rules change (a deploy, or a check under another plan) while its keys live on: fields of
    // the other rules meet the script.
    { weight: 1, arbitrary: fc.constant({ op: 'swap' as const }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), id: fc.constantFrom(...IDS) }) },
  );

/** One rule set: its script (refundable or not), the rules as its twin has them, and an identifier's mask. */
function scriptsFor(algorithm: AlgorithmName, limits: RuleInput[], refundable: boolean) {
  const opts = resolveOptions({ algorithm, limits: onlyOptionsOf(algorithm, limits) } as LimiterOptions);
  return {
    algorithm: opts.algorithm as Algorithm,
    lua: compileScript(opts.algorithm, opts.rules, refundable ? 'refundable' : 'single'),
    params: ruleParams(opts.rules, opts.algorithm),
    mask: (id: string) => ruleMask(opts.rules, identifierKind(id)),
    maxWindow: Math.max(...opts.rules.map((r) => r.windowMs)),
  };
}

/** Random rule sets and calls of `rules` and `ops`: every reply and every stored byte as the twin's. */
async function replaysLikeTheTwin(algorithm: AlgorithmName, ruleArb: fc.Arbitrary<RuleInput>, opArb: fc.Arbitrary<Op>): Promise<void> {
  let replayed = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(ruleArb, { minLength: 1, maxLength: 32 }),
      fc.array(ruleArb, { minLength: 1, maxLength: 4 }),
      fc.array(opArb, { minLength: 5, maxLength: 40 }),
      fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
      fc.boolean(),
      async (limits, otherLimits, ops, start, refundable) => {
        const sets = [scriptsFor(algorithm, limits, refundable), scriptsFor(algorithm, otherLimits, refundable)];
        let scripts = sets[0]!;
        const prefix = uniquePrefix('script');
        const twin = new Forever();
        const keysOf = (ids: string[]): string[] => ids.flatMap((id) => [`${prefix}:s:${id}`, `${prefix}:b:${id}`]);
        let now = start;
        for (const op of ops) {
          if (op.op === 'swap') {
            scripts = scripts === sets[0] ? sets[1]! : sets[0]!;
          } else if (op.op === 'advance') {
            now += op.ms;
          } else if (op.op === 'reset') {
            const [stateKey] = keysOf([op.id]);
            await redis.del(stateKey!);
            twin.map.delete(stateKey!);
          } else if (op.op === 'block') {
            const [, blockKey] = keysOf([op.id]);
            await redis.set(blockKey!, `${now + op.ms}|manual`, 'PX', op.ms + 600_000);
            twin.set(blockKey!, `${now + op.ms}|manual`);
          } else {
            // PAD: Redis expires keys in real time, which this clock does not follow; no key may expire here.
            const argv = [op.op, op.cost, op.penalty ? '1' : '0', String(now), PAD, ...op.ids.map(scripts.mask), newIncarnation()];
            const lua = await redis.eval(scripts.lua, 2 * op.ids.length, ...keysOf(op.ids), ...argv);
            const receipts = refundable ? scripts.algorithm.undo.twin : undefined;
            const js = runFrame(scripts.algorithm.twin, scripts.params, twin, keysOf(op.ids), argv, now, { receipts });
            expect(lua).toEqual(js);
            for (const id of op.ids) {
              const [stateKey] = keysOf([id]);
              const expected = twin.get(stateKey!);
              const actual = await stored(redis, algorithm, stateKey!);
              expect(actual.value).toEqual(expected === undefined ? undefined : encode(algorithm, expected));
              // Every key written has a TTL (invariant 4), and none longer than the state can need.
              if (actual.value !== undefined) {
                expect(actual.pttl).toBeGreaterThan(0);
                expect(actual.pttl).toBeLessThanOrEqual(PAD + 2 * Math.max(sets[0]!.maxWindow, sets[1]!.maxWindow) * 8);
              }
            }
          }
        }
        replayed++;
      },
    ),
    { numRuns: RUNS },
  );
  expect(replayed).toBeGreaterThanOrEqual(RUNS);
}

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('generated %s script', (algorithm) => {
  test('answers and stores exactly what the JavaScript twin does, over random rules and calls', async () => {
    await replaysLikeTheTwin(algorithm, rulesOf(6), opsOf(4));
  }, 240_000);
});

/*
 * A sliding-window ring is written as one string.char of its counts while they sum to at most 127 (each is
 * then its own byte in MessagePack), else by cmsgpack (scripts/sliding-window.ts, saveRing): counts that
 * cross 127 in one bucket and in the window, against the same twin.
 */
test('a sliding-window ring stores the same bytes on either side of 127 in its counts', async () => {
  await replaysLikeTheTwin('sliding-window', rulesOf(1_000), opsOf(90));
}, 240_000);

describe('the script of a rule set', () => {
  test('every mask the call planner can send has a branch, and an unknown mask is a Redis error, not a decision', async () => {
    const opts = resolveOptions({
      algorithm: 'fixed-window',
      limits: [
        { limit: 5, window: '1s' },
        { limit: 9, window: '1m', for: 'user' },
        { limit: 2, window: '1h', for: 'key' },
      ],
    } as LimiterOptions);
    expect(ruleMasks(opts.rules).sort()).toEqual(['100', '101', '110']);
    for (const id of IDS) expect(ruleMasks(opts.rules)).toContain(ruleMask(opts.rules, identifierKind(id)));
    const lua = compileScript(opts.algorithm, opts.rules);
    const prefix = uniquePrefix('script');
    const argv = ['c', 1, '0', '', 0];
    await expect(redis.eval(lua, 2, `${prefix}:s`, `${prefix}:b`, ...argv, '111')).rejects.toThrow(/no plan for rule mask 111/);
    expect(await redis.exists(`${prefix}:s`)).toBe(0);
  });

  test('every kind of sliding-window script compiles for 32 rules over 4 kinds, at precisions 10, 90 and 1000', async () => {
    const kinds = [undefined, 'user', 'key', 'org'];
    for (const precision of [10, 90, 1000]) {
      const limits = Array.from({ length: 32 }, (_, k) => ({
        limit: 50 + k,
        window: `${k + 1}h`,
        precision,
        ...(kinds[k % 4] ? { for: kinds[k % 4] } : {}),
      }));
      const opts = resolveOptions({ algorithm: 'sliding-window', limits } as LimiterOptions);
      for (const kind of ['single', 'refundable', 'split', 'settle'] as const) {
        const lua = compileScript(opts.algorithm, opts.rules, kind);
        await expect(redis.script('LOAD', lua)).resolves.toMatch(/^[0-9a-f]{40}$/);
      }
    }
  });

  test('grows with the rules, not with rules x scopes: 32 rules over 4 kinds, sliding-window rings of precision 1000', async () => {
    const kinds = [undefined, 'user', 'key', 'org'];
    const limits = Array.from({ length: 32 }, (_, k) => ({
      limit: 50 + k,
      window: `${k + 1}h`,
      precision: 1000,
      ...(kinds[k % 4] ? { for: kinds[k % 4] } : {}),
    }));
    const opts = resolveOptions({ algorithm: 'sliding-window', limits } as LimiterOptions);
    const lua = compileScript(opts.algorithm, opts.rules);
    const one = compileScript(
      opts.algorithm,
      opts.rules.filter((r) => r.for === undefined),
    );
    // 4 scopes cost about what the extra rules do, not 4 times the rules' code.
    expect(lua.split('\n').length).toBeLessThan(4.5 * one.split('\n').length);
    const ids = ['ip:10.0.0.9', 'user:zoe', 'key:k', 'org:o'];
    const prefix = uniquePrefix('script');
    const twin = new Forever();
    const keys = ids.flatMap((id) => [`${prefix}:s:${id}`, `${prefix}:b:${id}`]);
    for (let t = 0; t < 5; t++) {
      const now = 1_800_000_000_000 + t * 2_000_000;
      const argv = ['c', 7, '0', String(now), 0, ...ids.map((id) => ruleMask(opts.rules, identifierKind(id)))];
      expect(await redis.eval(lua, keys.length, ...keys, ...argv)).toEqual(
        runFrame(opts.algorithm.twin, ruleParams(opts.rules, opts.algorithm), twin, keys, argv, now),
      );
    }
  });

  test('opens with a comment naming each rule, field and mask', () => {
    const opts = resolveOptions({
      algorithm: 'token-bucket',
      limits: [
        { limit: 10, window: '1s', burst: 20 },
        { limit: 100, window: '1h', for: 'user' },
      ],
    } as LimiterOptions);
    const head = compileScript(opts.algorithm, opts.rules)
      .split('\n')
      .filter((l) => l.startsWith('--'))
      .slice(0, 12)
      .join('\n');
    expect(head).toContain('r1: 10 per 1s, field f1');
    expect(head).toContain("r2: 100 per 1h for 'user', field f2");
    expect(head).toContain('f1 = "1000:10:20" (rules r1)');
    expect(head).toContain("m2 '11': r1, r2, identifiers of kind 'user'");
  });
});
