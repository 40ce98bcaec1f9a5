import fc from 'fast-check';
import { identifierKind, resolveOptions, type AlgorithmName, type LimiterOptions, type RuleInput } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { MAX_COMPILED_RULES, compileScript, createProgram, ruleMask, ruleMasks } from '../src/algorithms/compile';
import { buildScript, ruleArgs } from '../src/algorithms/frame';

/*
 * The compiled scripts (algorithms/compile.ts) against the generic frame they replace, both on the real
 * Redis, over random rule sets and call sequences: every reply identical, and every state key left with
 * the same fields, the same bytes and the same expiry. The model test then ties Redis to the JS twins.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 200);
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob', 'key:k1'];
const PAD = 600_000;
const redis = connect();
afterAll(closeClients);

const ruleArb: fc.Arbitrary<RuleInput> = fc
  .record({
    limit: fc.integer({ min: 1, max: 6 }),
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
  | { op: 'swap' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constantFrom('c' as const, 'c' as const, 'p' as const), ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }), cost: fc.integer({ min: 0, max: 4 }), penalty: fc.boolean() }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: -700, max: 900 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1_000, max: 100_000 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('block' as const), id: fc.constantFrom(...IDS), ms: fc.integer({ min: 1, max: 3_000 }) }) },
  // The limiter's rules change (a deploy) while its keys live on: fields of removed rules meet the new script.
  { weight: 1, arbitrary: fc.constant({ op: 'swap' as const }) },
);

/** One rule set: the generic and the compiled script, the rule arguments, and an identifier's mask. */
function scriptsFor(algorithm: AlgorithmName, limits: RuleInput[]) {
  const opts = resolveOptions({ algorithm, limits } as LimiterOptions);
  const compiled = compileScript(opts.algorithm, opts.rules);
  expect(compiled).toBeDefined();
  return {
    generic: buildScript(opts.algorithm.lua),
    compiled: compiled!,
    rules: ruleArgs(opts.rules, opts.algorithm),
    mask: (id: string) => ruleMask(opts.rules, identifierKind(id)),
  };
}

/** A state key's fields (values as bytes: sliding-window rings are MessagePack) and its absolute expiry. */
async function snapshot(key: string): Promise<{ fields: Record<string, string>; expiresAt: number }> {
  const raw = await redis.hgetallBuffer(key);
  const fields = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, v.toString('hex')]));
  const pttl = await redis.pttl(key);
  return { fields, expiresAt: pttl < 0 ? pttl : Date.now() + pttl };
}

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'token-bucket'])('compiled %s', (algorithm) => {
  test('answers and stores exactly what the generic frame does, over random rules and calls', async () => {
    let replayed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(ruleArb, { minLength: 1, maxLength: MAX_COMPILED_RULES }),
        fc.array(ruleArb, { minLength: 1, maxLength: 4 }),
        fc.array(opArb, { minLength: 5, maxLength: 40 }),
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        async (limits, otherLimits, ops, start) => {
          const sets = [scriptsFor(algorithm, limits), scriptsFor(algorithm, otherLimits)];
          let scripts = sets[0]!;
          const prefix = uniquePrefix('compiled');
          const keysOf = (which: string, ids: string[]): string[] => ids.flatMap((id) => [`${prefix}:${which}:s:${id}`, `${prefix}:${which}:b:${id}`]);
          let now = start;
          for (const op of ops) {
            if (op.op === 'swap') {
              scripts = scripts === sets[0] ? sets[1]! : sets[0]!;
            } else if (op.op === 'advance') {
              now += op.ms;
            } else if (op.op === 'block') {
              for (const which of ['generic', 'compiled']) await redis.set(keysOf(which, [op.id])[1]!, `${now + op.ms}|manual`, 'PX', op.ms + PAD);
            } else {
              const argv = [op.op, op.cost, op.penalty ? '1' : '0', String(now), PAD, ...scripts.rules, ...op.ids.map(scripts.mask)];
              const generic = await redis.eval(scripts.generic, 2 * op.ids.length, ...keysOf('generic', op.ids), ...argv);
              const ours = await redis.eval(scripts.compiled, 2 * op.ids.length, ...keysOf('compiled', op.ids), ...argv);
              expect(ours).toEqual(generic);
              for (const id of op.ids) {
                const [g, c] = [await snapshot(keysOf('generic', [id])[0]!), await snapshot(keysOf('compiled', [id])[0]!)];
                expect(c.fields).toEqual(g.fields);
                expect(Math.abs(c.expiresAt - g.expiresAt)).toBeLessThan(50);
              }
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

describe('which scripts a limiter runs', () => {
  test('every mask the call planner can send has a branch, and an unknown mask is a Redis error, not a decision', async () => {
    const opts = resolveOptions({ algorithm: 'fixed-window', limits: [{ limit: 5, window: '1s' }, { limit: 9, window: '1m', for: 'user' }, { limit: 2, window: '1h', for: 'key' }] } as LimiterOptions);
    expect(ruleMasks(opts.rules).sort()).toEqual(['100', '101', '110']);
    for (const id of IDS) expect(ruleMasks(opts.rules)).toContain(ruleMask(opts.rules, identifierKind(id)));
    const lua = compileScript(opts.algorithm, opts.rules)!;
    const prefix = uniquePrefix('compiled');
    const argv = ['c', 1, '0', '', 0, ...ruleArgs(opts.rules, opts.algorithm)];
    await expect(redis.eval(lua, 2, `${prefix}:s`, `${prefix}:b`, ...argv, '111')).rejects.toThrow(/no compiled plan for rule mask 111/);
    expect(await redis.exists(`${prefix}:s`)).toBe(0);
  });

  test('the largest shapes compile and agree: 8 rules, sliding-window rings of precision 1000', async () => {
    const limits = Array.from({ length: MAX_COMPILED_RULES }, (_, k) => ({ limit: 50 + k, window: `${k + 1}h`, precision: 1000, ...(k % 2 ? { for: 'user' } : {}) }));
    const opts = resolveOptions({ algorithm: 'sliding-window', limits } as LimiterOptions);
    const scripts = { generic: buildScript(opts.algorithm.lua), compiled: compileScript(opts.algorithm, opts.rules)! };
    const prefix = uniquePrefix('compiled');
    const ids = ['ip:10.0.0.9', 'user:zoe'];
    for (let t = 0; t < 5; t++) {
      const argv = ['c', 7, '0', String(1_800_000_000_000 + t * 2_000_000), PAD, ...ruleArgs(opts.rules, opts.algorithm), ...ids.map((id) => ruleMask(opts.rules, identifierKind(id)))];
      const replies = [];
      for (const which of ['generic', 'compiled'] as const) {
        replies.push(await redis.eval(scripts[which], 4, ...ids.flatMap((id) => [`${prefix}:${which}:s:${id}`, `${prefix}:${which}:b:${id}`]), ...argv));
      }
      expect(replies[1]).toEqual(replies[0]);
    }
  });

  test('sliding-log and rule sets above the compiled maximum run the generic frame', () => {
    const many = Array.from({ length: MAX_COMPILED_RULES + 1 }, (_, k) => ({ limit: 5, window: `${k + 1}s` }));
    const compiled = (algorithm: AlgorithmName, limits: RuleInput[]): boolean => {
      const opts = resolveOptions({ algorithm, limits } as LimiterOptions);
      return createProgram(opts.algorithm, opts.rules).compiled;
    };
    expect(compiled('fixed-window', many.slice(0, MAX_COMPILED_RULES))).toBe(true);
    expect(compiled('fixed-window', many)).toBe(false);
    expect(compiled('sliding-log', many.slice(0, 2))).toBe(false);
  });
});
