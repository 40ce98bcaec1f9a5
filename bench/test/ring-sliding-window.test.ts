import Redis from 'ioredis';
import { createProgram } from '../../packages/core/src/scripts/compiler';
import { resolveOptions } from '../../packages/core/src/engine/options';
import type { LimiterOptions } from '@floodgate/core';
import { ringSlidingWindow } from '../src/lib/ring-sliding-window';
import { startBenchRedis, type BenchRedis } from '../src/lib/machine';

/*
 * Floodgate's sliding window on a packed layout (bench/src/lib/ring-sliding-window.ts), which bench:script-cost
 * measures beside the generated script: it must decide exactly as Floodgate's does, or its cost would be that
 * of another algorithm. On a real redis-server, the same random checks (identifiers, costs, times given in
 * ARGV[4] as Floodgate's scripts take one) go through both, and every reply must match: admitted or not,
 * and per identifier and rule the available count, the reset and the retry.
 */
let redis: BenchRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startBenchRedis();
  client = new Redis({ port: redis.port, lazyConnect: true });
  await client.connect();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});
beforeEach(() => redis.cli('FLUSHALL'));

const RULES = [
  { limit: 5, window: '1s' },
  { limit: 12, window: '1m' },
  { limit: 20, window: '1h' },
];
function floodgate(rules: typeof RULES): string {
  const opts = resolveOptions({ algorithm: 'sliding-window', limits: rules } as LimiterOptions);
  return createProgram(opts.algorithm, opts.rules).lua;
}

/** Floodgate's reply, cut to the twin's: admitted, then avail, reset and retry per identifier and rule. */
async function viaFloodgate(lua: string, rules: number, ids: string[], cost: number, now: number): Promise<number[]> {
  const keys = ids.flatMap((id) => [`fg:{${id}}`, `fg:!b:{${id}}`]);
  const mask = '1'.repeat(rules);
  const reply = (await client.eval(lua, keys.length, ...keys, 'c', String(cost), '0', String(now), '0', ...ids.map(() => mask), '')) as (
    number | string
  )[];
  return [Number(reply[1]), ...reply.slice(3 + 2 * ids.length).map(Number)];
}

async function viaRing(lua: string, ids: string[], cost: number, now: number): Promise<number[]> {
  const keys = ids.flatMap((id) => [`ring:{${id}}`, `ring:!b:{${id}}`]);
  return ((await client.eval(lua, keys.length, ...keys, 'c', String(cost), '0', String(now), '0')) as number[]).map(Number);
}

/** A small deterministic generator, so a failure replays. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

test.each([1, 2, 3])('decides, resets and retries as Floodgate sliding window does, 3 rules on 2 identifiers (seed %i)', async (seed) => {
  const next = random(seed);
  const [fg, ring] = [floodgate(RULES), ringSlidingWindow(RULES)];
  let now = 1_000 * 3_600_000 + Math.floor(next() * 3_600_000);
  let denied = 0;
  for (let i = 0; i < 1_500; i++) {
    // Gaps from a millisecond to past the longest bucket (6 min) and now and then past a window, so rings
    // advance by one bucket, by several, and wrap.
    const r = next();
    now += r < 0.6 ? Math.floor(next() * 300) : r < 0.9 ? Math.floor(next() * 20_000) : Math.floor(next() * 900_000);
    const ids = [`ip${Math.floor(next() * 3)}`, `user${Math.floor(next() * 2)}`];
    const cost = next() < 0.8 ? 1 : Math.floor(next() * 7);
    const expected = await viaFloodgate(fg, RULES.length, ids, cost, now);
    expect([i, await viaRing(ring, ids, cost, now)]).toEqual([i, expected]);
    if (expected[0] === 0) denied++;
  }
  // Both sides of the limit were replayed.
  expect(denied).toBeGreaterThan(100);
  expect(denied).toBeLessThan(1_400);
});

test('keeps a rule in 13 doubles (its bucket, its total, its ring of 11) on one string per identifier, with a TTL past its longest ring', async () => {
  const ring = ringSlidingWindow(RULES);
  const now = 1_000 * 3_600_000;
  expect((await viaRing(ring, ['a', 'b'], 1, now))[0]).toBe(1);
  expect(await client.strlen('ring:{a}')).toBe(3 * 13 * 8);
  expect(await client.pttl('ring:{a}')).toBeGreaterThan(3_600_000);
  await client.set('ring:!b:{b}', 'x');
  expect(await viaRing(ring, ['c', 'b'], 1, now + 1)).toEqual([0, 2]);
});
