import fc from 'fast-check';
import { createLimiter, defineClient, type AlgorithmName, type LimiterOptions, type RuleInput } from '@floodgate/core';
import { closeClients, commandStats, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';
import { encodeIdentifier, identifierKind, keyScheme } from '../src/scripts/keys';
import { resolveOptions } from '../src/engine/options';
import { createProgram, ruleMask } from '../src/scripts/compiler';
import { runFrame } from '../src/scripts/frame';
import { Forever } from './fixtures/forever-storage';
import { adapterOf, scriptOf } from '../src/stores/clients';
import { BATCH_MAX, Batcher } from '../src/stores/batch';
import { keepWhole, type FloodgateLimiter } from '../src/engine/limiter';
import { createHttpLimiter } from '../src/http/http-limiter';
import type { Reply } from '../src/scripts/reply';
import { onlyOptionsOf } from './fixtures/rule-options';

/*
 * Batching (stores/batch.ts): the checks of a turn travel in one script call, and each must be decided
 * exactly as the same checks sent one after another. The batch script against the algorithms' JavaScript
 * twins over random rules and random batches (each check with its own clock, cost, op and identifiers),
 * and through limiters over real sockets.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 60);
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob', 'key:k1'];
const PAD = 600_000;

const redis = connect();
let own: StartedRedis | undefined;
afterAll(async () => {
  await closeClients();
  await own?.stop();
});

const ruleArb: fc.Arbitrary<RuleInput> = fc
  .record({
    limit: fc.integer({ min: 1, max: 6 }),
    window: fc.constantFrom(500, 1000, 2000),
    kind: fc.constantFrom(undefined, undefined, 'user'),
    burst: fc.integer({ min: 1, max: 8 }),
    precision: fc.constantFrom(1, 2, 5, 10),
  })
  .map(({ kind, ...r }) => (kind === undefined ? r : { ...r, for: kind }));

const checkArb = fc.record({
  op: fc.constantFrom('c' as const, 'c' as const, 'p' as const),
  ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }),
  cost: fc.integer({ min: 0, max: 3 }),
  dt: fc.integer({ min: -300, max: 600 }),
});
const batchArb = fc.record({ penalty: fc.boolean(), checks: fc.array(checkArb, { minLength: 1, maxLength: 7 }) });

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'])('a batch of %s checks', (algorithm) => {
  test('answers each check exactly what the twin answers the same checks one after another', async () => {
    const client = adapterOf(redis);
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(ruleArb, { minLength: 1, maxLength: 6 }),
        fc.array(batchArb, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        async (limits, batches, start) => {
          const opts = resolveOptions({ algorithm, limits: onlyOptionsOf(algorithm, limits) } as LimiterOptions);
          const program = createProgram(opts.algorithm, opts.rules);
          const mask = (id: string): string => ruleMask(opts.rules, identifierKind(id));
          const prefix = uniquePrefix('batch');
          const keysOf = (ids: string[]): string[] => ids.flatMap((id) => [`${prefix}:s:${id}`, `${prefix}:b:${id}`]);
          const twin = new Forever();
          const batcher = new Batcher(client);
          let now = start;
          for (const batch of batches) {
            const calls = batch.checks.map((c) => {
              now += c.dt;
              const argv = [c.op, c.cost, batch.penalty ? '1' : '0', String(now), PAD, ...c.ids.map(mask)];
              return { keys: keysOf(c.ids), argv, now };
            });
            // All queued in one turn: the first leaves alone (the batcher is idle: stores/turn-batches.ts), the
            // rest in one batch (fewer than BATCH_MAX), all decided in order.
            const replies = await Promise.all(calls.map((c) => batcher.add(program, c.keys, c.argv, Infinity).reply));
            calls.forEach((c, i) => {
              expect(replies[i]).toEqual(runFrame(opts.algorithm.twin, program.params, twin, c.keys, c.argv, c.now));
              checked++;
            });
            // Every key a batch wrote keeps the TTL padding of the frame's ARGV (the shared values).
            for (const id of IDS) {
              const pttl = await redis.pttl(`${prefix}:s:${id}`);
              if (pttl !== -2) expect(pttl).toBeGreaterThan(PAD - 60_000);
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
    expect(checked).toBeGreaterThan(RUNS);
  }, 120_000);
});

describe('batches of settles', () => {
  const limits: RuleInput[] = [
    { limit: 1_000, window: '1m' },
    { limit: 100_000, window: '1m', unit: 'tokens' },
    { limit: 50_000, window: '1h', unit: 'tokens', for: 'user' },
  ];
  const IDS_OF = [['user:a'], ['user:b', 'ip:192.0.2.1'], ['user:a', 'key:k'], ['ip:192.0.2.1']];

  test('the settles of one turn travel in one call, and each counts exactly as it would alone', async () => {
    // A server of its own: INFO commandstats counts every client's calls, and other workers' tests share the run's server.
    const server = await startRedis();
    const client = connect(server.url);
    const make = (prefix: string) =>
      createLimiter({ redis: client, prefix, algorithm: 'sliding-window', refunds: true, limits, blockCache: false, timeoutMs: 5_000 });
    const alone = make(uniquePrefix('settle-alone'));
    const batched = make(uniquePrefix('settle-batched'));
    // 40 reservations at an estimate of 500 tokens, settled at 100 to 899 (a give-back or a charge each).
    const actual = (i: number) => ({ requests: 1, tokens: 100 + ((i * 137) % 800) });
    const reserve = (limiter: typeof alone) =>
      Promise.all(Array.from({ length: 40 }, (_, i) => limiter.reserve(IDS_OF[i % 4]!, { cost: { requests: 1, tokens: 500 } })));
    const one = await reserve(alone);
    const many = await reserve(batched);
    for (const [i, r] of one.entries()) expect(await r.settle(actual(i))).toBe(true);
    const before = await commandStats(client);
    expect(await Promise.all(many.map((r, i) => r.settle(actual(i))))).toEqual(many.map(() => true));
    const after = await commandStats(client);
    // One call per batch of BATCH_MAX (and at most one NOSCRIPT'd EVALSHA and its EVAL per batch script).
    const calls = (after.evalsha ?? 0) + (after.eval ?? 0) - (before.evalsha ?? 0) - (before.eval ?? 0);
    expect(calls).toBeLessThanOrEqual(Math.ceil(40 / BATCH_MAX) + 2);
    // Every identifier's windows hold the same on both sides.
    for (const id of ['user:a', 'user:b', 'ip:192.0.2.1', 'key:k']) {
      const [x, y] = await Promise.all([alone.peek(id), batched.peek(id)]);
      expect(y.states.map((s) => [s.unit, s.remaining])).toEqual(x.states.map((s) => [s.unit, s.remaining]));
    }
    await Promise.all([alone.close(), batched.close()]);
    await server.stop();
  });

  test("a settle's error in a batch is its own: the others of the batch still count", async () => {
    const prefix = uniquePrefix('settle-error');
    const limiter = createLimiter({ redis, prefix, refunds: true, limits, blockCache: false, timeoutMs: 5_000, failure: 'closed' });
    const ids = ['user:a', 'user:b', 'user:c'];
    const reservations = await Promise.all(ids.map((id) => limiter.reserve(id, { cost: { requests: 1, tokens: 500 } })));
    // user:b's state key replaced by a string: its settle's script call fails (WRONGTYPE).
    const tag = resolveOptions({ limits } as LimiterOptions).algorithm.tag;
    const bKey = keyScheme(prefix, limiter.name, tag, false).state(encodeIdentifier('user:b'));
    expect(await redis.type(bKey)).toBe('hash');
    await redis.set(bKey, 'not a hash', 'PX', 60_000);
    const out = await Promise.allSettled(reservations.map((r) => r.settle({ requests: 1, tokens: 100 })));
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // user:a and user:c got 400 tokens back each: 100 counted of 100,000.
    for (const id of ['user:a', 'user:c']) {
      const d = await limiter.peek(id);
      expect(d.states.find((s) => s.unit === 'tokens' && s.windowMs === 60_000)?.remaining).toBe(100_000 - 100);
    }
    await limiter.close();
  });
});

describe('batches', () => {
  const opts = resolveOptions({ algorithm: 'fixed-window', limits: [{ limit: 3, window: '1m' }] } as LimiterOptions);
  const program = createProgram(opts.algorithm, opts.rules);
  const argvOf = (now: string, m = '1'): (string | number)[] => ['c', 1, '0', now, 0, m];

  test("an error in one check (an unknown mask, a key of the wrong type) is that check's alone", async () => {
    const prefix = uniquePrefix('batch');
    await redis.set(`${prefix}:s:wrong`, 'a string, not a hash', 'PX', 60_000);
    const batcher = new Batcher(adapterOf(redis));
    const add = (id: string, m?: string) =>
      batcher.add(program, [`${prefix}:s:${id}`, `${prefix}:b:${id}`], argvOf('', m), Infinity).reply.then(
        (r) => ({ ok: true as const, r }),
        (e: Error) => ({ ok: false as const, e }),
      );
    const out = await Promise.all([add('a'), add('wrong'), add('b'), add('c', '11'), add('a')]);
    expect(out.map((o) => o.ok)).toEqual([true, false, true, false, true]);
    expect(String((out[1] as { e: Error }).e.message)).toMatch(/WRONGTYPE/);
    expect(String((out[3] as { e: Error }).e.message)).toMatch(/no plan for rule mask 11/);
    // The checks around the failures were decided and counted: 'a' twice, 'b' once.
    const [a1, , b, , a2] = out.map((o) => (o.ok ? (o.r as Reply) : undefined));
    expect([a1![1], a1![5], b![5], a2![5]]).toEqual([1, 2, 2, 1]);
  });

  test('a client that throws instead of rejecting fails the checks of the batch by the policy, and nothing else', async () => {
    let calls = 0;
    const client = defineClient({
      evalsha: () => {
        calls++;
        throw new Error('ECONNRESET thrown, not rejected');
      },
      eval: () => Promise.reject(new Error('never')),
      del: () => Promise.resolve(0),
    });
    const limiter = createLimiter({
      redis: client,
      prefix: uniquePrefix('batch'),
      limits: { limit: 5, window: '1m' },
      failure: 'closed',
      logger: { warn: () => undefined },
    });
    const one = await limiter.check('ip:192.0.2.1');
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => limiter.check(`ip:192.0.2.${i + 2}`)));
    for (const d of [one, ...many]) expect(d).toMatchObject({ allowed: false, source: 'fallback' });
    expect(calls).toBeGreaterThanOrEqual(2); // a batch of one, then batches of the 20
    await limiter.close();
  });

  test("a reply's strings come back exactly, whatever they hold (a block reason with the text's separators)", async () => {
    const prefix = uniquePrefix('batch');
    const limiter = createLimiter({ redis, prefix, limits: { limit: 5, window: '1m' }, blockCache: false });
    const reason = "a,b %2C,%25 % ,, 'quoted' é";
    await limiter.block('user:a', { duration: '1m', reason });
    // Two checks in one turn travel in one batch: both blocked, each with the reason as it was set.
    const [a, b] = await Promise.all([limiter.check('user:a'), limiter.check(['user:b', 'user:a'])]);
    for (const d of [a, b]) expect(d).toMatchObject({ allowed: false, reason: 'blocked', identifier: 'user:a', blockReason: reason });
    await limiter.close();
  });

  test("a batch's reply, left shorter on the wire, is rebuilt exactly (types too) as each check alone gets it", async () => {
    // Blocked with a reason, blocked without one, not blocked; one to three identifiers; a refundable
    // program, whose reply ends in receipts only when it consumed; a clock given and Redis TIME in one batch.
    const refundable = createProgram(opts.algorithm, opts.rules, true);
    const client = adapterOf(redis);
    const batched = uniquePrefix('batch-wire');
    const alone = uniquePrefix('batch-alone');
    const now = Date.now();
    for (const prefix of [batched, alone]) {
      await redis.set(`${prefix}:b:r`, `${now + 30_000}|a reason, with "quotes"`, 'PX', 60_000);
      await redis.set(`${prefix}:b:bare`, String(now + 20_000), 'PX', 60_000);
    }
    const checks: { ids: string[]; clock: string; op?: string; cost?: number }[] = [
      { ids: ['a'], clock: String(now) },
      { ids: ['r'], clock: String(now + 1) },
      { ids: ['a', 'bare'], clock: String(now + 2) },
      { ids: ['b', 'a', 'c'], clock: String(now + 3) },
      { ids: ['a'], clock: String(now + 4), op: 'p', cost: 0 },
      { ids: ['a'], clock: String(now + 5) },
      { ids: ['a', 'r'], clock: '' },
      { ids: ['b'], clock: '' },
    ];
    const keysOf = (prefix: string, ids: string[]): string[] => ids.flatMap((id) => [`${prefix}:s:${id}`, `${prefix}:b:${id}`]);
    const argvOf2 = (c: (typeof checks)[number]): (string | number)[] => [
      c.op ?? 'c',
      c.cost ?? 1,
      '0',
      c.clock,
      0,
      ...c.ids.map(() => '1'),
      '7',
    ];
    const batcher = new Batcher(client);
    const replies = await Promise.all(checks.map((c) => batcher.add(refundable, keysOf(batched, c.ids), argvOf2(c), Infinity).reply));
    const script = scriptOf(refundable.algorithm.tag, refundable.lua);
    for (const [i, c] of checks.entries()) {
      const own = (await client.evalScript(script, keysOf(alone, c.ids), argvOf2(c), Infinity)) as Reply;
      // On Redis TIME the two runs read different clocks: the clock and what follows from it may differ.
      if (c.clock === '') {
        expect(replies[i]!.map((v) => typeof v)).toEqual(own.map((v) => typeof v));
        const flagsAndReasons = (r: Reply) => [r[1], r[2], ...c.ids.map((_, k) => r[4 + 2 * k])];
        expect(flagsAndReasons(replies[i]!)).toEqual(flagsAndReasons(own));
      } else expect(replies[i]).toEqual(own);
    }
    // What the cases were: a reason came back with its block, a bare block with '', receipts after a consume.
    expect(replies[1]!.slice(3, 5)).toEqual([expect.any(Number), 'a reason, with "quotes"']);
    expect(replies[2]!.slice(5, 7)).toEqual([expect.any(Number), '']);
    expect(Number(replies[2]![5])).toBeGreaterThan(0);
    expect(replies[0]!.length).toBeGreaterThan(3 + 2 + 3);
    expect(replies[4]!.length).toBe(3 + 2 + 3);
  });

  test('checks on Redis TIME share one reading of it, the same as each would have read', async () => {
    const prefix = uniquePrefix('batch');
    const batcher = new Batcher(adapterOf(redis));
    const [t0] = await redis.time();
    // The first leaves alone, the batcher being idle (stores/turn-batches.ts), with a reading of its own; the
    // other three in one batch.
    const replies = await Promise.all(
      ['first', 'a', 'b', 'c'].map((id) => batcher.add(program, [`${prefix}:s:${id}`, `${prefix}:b:${id}`], argvOf(''), Infinity).reply),
    );
    const [t1] = await redis.time();
    const nows = replies.slice(1).map((r) => Number(r[0]));
    expect(new Set(nows).size).toBe(1);
    expect(nows[0]).toBeGreaterThanOrEqual(Number(t0) * 1000);
    expect(nows[0]).toBeLessThanOrEqual((Number(t1) + 1) * 1000);
  });

  test('a full batch leaves at once; limiters over a real socket admit exactly the limit however the checks are batched', async () => {
    own = await startRedis();
    const client = connect(own.url);
    const limiter = createLimiter({ redis: client, prefix: uniquePrefix('batch'), limits: { limit: 37, window: '1m' }, timeoutMs: 5_000 });
    await limiter.check('ip:192.0.2.1');
    const before = await commandStats(client);
    // 5 identifiers x 60 checks started together, interleaved: the units in flight per identifier let 37 of
    // each go to Redis, in batches of BATCH_MAX.
    const ids = ['ip:192.0.2.10', 'ip:192.0.2.11', 'user:a', 'user:b', 'key:k'];
    const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => limiter.check(ids[i % 5]!)));
    for (const id of ids) {
      const mine = decisions.filter((_, i) => ids[i % 5] === id);
      expect(mine.filter((d) => d.allowed)).toHaveLength(37);
    }
    const after = await commandStats(client);
    const calls = (after.evalsha ?? 0) + (after.eval ?? 0) - (before.evalsha ?? 0) - (before.eval ?? 0);
    const fromRedis = decisions.filter((d) => d.source === 'redis').length;
    expect(fromRedis).toBeGreaterThanOrEqual(5 * 37);
    // One call per batch (plus at most one NOSCRIPT'd EVALSHA and its EVAL: the batch script's first use).
    expect(calls).toBeLessThanOrEqual(Math.ceil(fromRedis / BATCH_MAX) + 4);
    // After SCRIPT FLUSH, batches load their script again (EVAL after NOSCRIPT) and decide as before.
    await client.script('FLUSH');
    const again = await Promise.all(Array.from({ length: 40 }, (_, i) => limiter.check(`user:fresh${i % 4}`)));
    expect(again.filter((d) => d.allowed)).toHaveLength(40);
    expect(again.every((d) => d.source === 'redis')).toBe(true);
    await limiter.close();
  });

  test('a turn asked to keep its batches whole sends its 100 checks in one call; the next turn splits at BATCH_MAX again', async () => {
    // A server of its own: INFO commandstats counts every client's calls.
    const server = await startRedis();
    const client = connect(server.url);
    const limiter = createLimiter({
      redis: client,
      prefix: uniquePrefix('whole'),
      limits: { limit: 1_000, window: '1m' },
      timeoutMs: 5_000,
    });
    const scriptCalls = async (): Promise<number> => {
      const s = await commandStats(client);
      return (s.evalsha ?? 0) + (s.eval ?? 0);
    };
    const checks = (n: number, from: number) => Array.from({ length: n }, (_, i) => limiter.check(`user:u${from + i}`));
    // Warm-up: connected, the registry written, the batch script loaded (the first check leaves alone, the
    // store being idle; the other two in a batch).
    await Promise.all(checks(3, 0));
    let before = await scriptCalls();
    (limiter as FloodgateLimiter)[keepWhole]();
    const whole = await Promise.all(checks(100, 100));
    expect(whole.every((d) => d.allowed && d.source === 'redis')).toBe(true);
    expect((await scriptCalls()) - before).toBe(1);
    before = await scriptCalls();
    await Promise.all(checks(100, 200));
    // The first leaves alone (nothing in flight: stores/turn-batches.ts), the other 99 in calls of BATCH_MAX.
    expect((await scriptCalls()) - before).toBe(1 + Math.ceil(99 / BATCH_MAX));
    // Through the HTTP layer the adapters use: the same.
    const http = createHttpLimiter<{ id: string }>({ limiter, identify: (req) => `user:${req.id}` });
    before = await scriptCalls();
    http.keepWhole();
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => http.run({ id: `h${i}` }, '192.0.2.1')));
    expect(outcomes.every((o) => o.action === 'next')).toBe(true);
    expect((await scriptCalls()) - before).toBe(1);
    await limiter.close();
    await server.stop();
  });

  test('a memory store has nothing to keep whole: asking changes nothing', async () => {
    const limiter = createLimiter({ prefix: uniquePrefix('whole-memory'), limits: { limit: 3, window: '1m' } });
    const http = createHttpLimiter<{ id: string }>({ limiter, identify: (req) => `user:${req.id}` });
    http.keepWhole();
    (limiter as FloodgateLimiter)[keepWhole]();
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.check('user:a')));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    await limiter.close();
  });
});
