import request from 'supertest';
import type { ThrottlerOptions } from '@nestjs/throttler';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { FloodgateThrottlerStorage, type FloodgateThrottlerStorageOptions, type ThrottlerStorageRecord } from '@floodgate/nestjs';
import { asGuardReads, testClock, throttledApp, throttlerOnClock } from './throttler-apps';

/*
 * FloodgateThrottlerStorage answers as @nestjs/throttler's own in-memory storage (the installed version's,
 * 6.7.1) does: the same hits at the same instants get the same records, side by side, for every kind of
 * blockDuration (none, shorter than the ttl, the ttl, longer). Both run on the test's clock (Floodgate's
 * `clock` option; Date.now for throttler's), so no answer depends on how fast the machine is; the counts are
 * in a real Redis.
 */
const redis = connect();
const closing = closeAfterEach();

function floodgateStorage(options: FloodgateThrottlerStorageOptions = {}): FloodgateThrottlerStorage {
  // The deadline is not the subject: a Redis call past the default one on a loaded machine is answered by
  // the failure policy, which no record of throttler's matches.
  const onRedis = options.redis !== undefined || !('redis' in options);
  const storage = new FloodgateThrottlerStorage({
    redis,
    prefix: uniquePrefix('throttler'),
    ...(onRedis ? { timeoutMs: 10_000 } : {}),
    ...options,
  });
  closing({ close: () => storage.onApplicationShutdown() });
  return storage;
}

/** The storages side by side on one clock. */
function storages(options: FloodgateThrottlerStorageOptions = {}) {
  const clock = testClock();
  const theirs = throttlerOnClock(clock.now);
  closing(theirs);
  return { clock, theirs, ours: floodgateStorage({ clock: clock.now, ...options }) };
}

type Throttler = { ttl: number; limit: number; blockDuration: number };
type Hit = [ms: number, key: string];

/** Sends each hit to both storages at its instant; every record must be the same. Throttler's records. */
async function sideBySide(throttler: Throttler, hits: Hit[], options: FloodgateThrottlerStorageOptions = {}) {
  const { clock, theirs, ours } = storages(options);
  const { ttl, limit, blockDuration } = throttler;
  const rows: { ms: number; key: string; theirs: ThrottlerStorageRecord; ours: ThrottlerStorageRecord }[] = [];
  for (const [ms, key] of hits) {
    clock.at(ms);
    const a = await theirs.increment(key, ttl, limit, blockDuration, 'default');
    const b = await ours.increment(key, ttl, limit, blockDuration, 'default');
    if (!a.isBlocked) expect(a.timeToBlockExpire).toBeLessThanOrEqual(0);
    rows.push({ ms, key, theirs: asGuardReads(a), ours: asGuardReads(b) });
  }
  expect(rows.map(({ ms, key, ours: r }) => ({ ms, key, ...r }))).toEqual(rows.map(({ ms, key, theirs: r }) => ({ ms, key, ...r })));
  return rows.map((r) => r.theirs);
}

/** A deterministic pseudo-random sequence (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `n` hits on two keys with gaps of every size: the same millisecond, a few ms, a fraction of the ttl,
 * more than the ttl, longer than any block; so that counts fill, hits leave their ttl one by one, blocks
 * start, are hit while they run, end with the crossing count still within its ttl or not, and record
 * windows end and start again.
 */
function hitsOf(seed: number, n: number, ttl: number): Hit[] {
  const next = random(seed);
  const gaps = [
    () => 0,
    () => 1 + Math.floor(next() * 20),
    () => Math.floor(next() * ttl * 0.4),
    () => Math.floor(ttl * (0.5 + next())),
    () => ttl * 3,
  ];
  const weights = [0.15, 0.3, 0.35, 0.15, 0.05];
  const out: Hit[] = [];
  let ms = 0;
  for (let i = 0; i < n; i++) {
    let r = next();
    let g = 0;
    while (r > weights[g]! && g < weights.length - 1) r -= weights[g++]!;
    ms += gaps[g]!();
    out.push([ms, next() < 0.85 ? 'a' : 'b']);
  }
  return out;
}

// Several seconds, so that the whole seconds of timeToExpire and timeToBlockExpire take several values.
const TTL = 4000;
const BLOCKS: [string, number][] = [
  ['no blockDuration (0)', 0],
  ['a blockDuration shorter than the ttl', 1500],
  ['a blockDuration equal to the ttl', TTL],
  ['a blockDuration longer than the ttl', 9000],
];

describe.each(BLOCKS)('record for record as throttler 6.7.1, %s', (_label, blockDuration) => {
  const throttler = { ttl: TTL, limit: 3, blockDuration };

  test('a burst past the limit, hits while refused, the oldest hits leaving their ttl, a long pause', async () => {
    const records = await sideBySide(
      throttler,
      [0, 100, 200, 300, 350, 399, 400, 999, 1000, 1001, 1100, 1250, 1399, 1400, 2500, 2600, 2601, 2602, 2603, 2700, 6000, 6001].map(
        (ms): Hit => [ms * 4, 'k'],
      ),
    );
    // Refused at the limit: with no blockDuration the fourth hit is refused too, and nothing is reset.
    expect(records.slice(0, 4).map((r) => r.isBlocked)).toEqual([false, false, false, true]);
  });

  test.each([1, 2, 3])('a random sequence of 250 hits on two keys (seed %i)', async (seed) => {
    const records = await sideBySide(throttler, hitsOf(seed * 7919 + blockDuration, 250, TTL));
    // The sequence went through refusals and admissions after them.
    const refusedAt = records.findIndex((r) => r.isBlocked);
    expect(refusedAt).toBeGreaterThan(0);
    expect(records.slice(refusedAt).some((r) => !r.isBlocked)).toBe(true);
  });
});

test.each(BLOCKS)('hits at once, round after round, %s: each round admits what throttler admits', async (_label, blockDuration) => {
  // Concurrent hits race each other's writes (a block, a reset, a restart of the held hits): the records
  // of a round may differ from throttler's, which answers one hit at a time, but never what they admit.
  const { clock, theirs, ours } = storages();
  const rounds = [0, 1, 500, 1600, 2000, 4100, 5000, 9100, 13_200, 13_300, 30_000];
  const admitted: { ms: number; theirs: number; ours: number }[] = [];
  for (const ms of rounds) {
    clock.at(ms);
    const burst = (storage: typeof ours | typeof theirs) =>
      Promise.all(Array.from({ length: 60 }, () => storage.increment('k', TTL, 5, blockDuration, 'default')));
    const [a, b] = [await burst(theirs), await burst(ours)];
    admitted.push({ ms, theirs: a.filter((r) => !r.isBlocked).length, ours: b.filter((r) => !r.isBlocked).length });
  }
  expect(admitted.map(({ ms, ours: n }) => [ms, n])).toEqual(admitted.map(({ ms, theirs: n }) => [ms, n]));
  expect(admitted.some((r) => r.theirs === 5)).toBe(true);
});

test('record for record on the in-memory store too (no redis)', async () => {
  for (const [, blockDuration] of BLOCKS) {
    await sideBySide({ ttl: TTL, limit: 2, blockDuration }, hitsOf(11 + blockDuration, 120, TTL), { redis: undefined });
  }
});

test('with limit 1 and hits in one millisecond, and with a large limit', async () => {
  for (const [, blockDuration] of BLOCKS) {
    await sideBySide({ ttl: TTL, limit: 1, blockDuration }, hitsOf(5 + blockDuration, 150, TTL));
    await sideBySide({ ttl: 5000, limit: 40, blockDuration }, hitsOf(17 + blockDuration, 400, 250));
  }
});

/** Through ThrottlerGuard on both storages, on one clock: each response as the guard wrote it. */
async function throughGuard(throttlers: ThrottlerOptions[], at: number[]) {
  const { clock, theirs, ours } = storages();
  const memory = await throttledApp('express', theirs, throttlers);
  const floodgate = await throttledApp('express', ours, throttlers);
  closing(memory.app);
  closing(floodgate.app);
  const answer = async (url: string) => {
    const res = await request(url).get('/x');
    const h = res.headers;
    return [
      res.status,
      h['x-ratelimit-remaining'],
      h['x-ratelimit-reset'],
      h['retry-after'],
      res.status === 429 ? (res.body as { message: string }).message : '',
    ];
  };
  const rows: { ms: number; theirs: unknown[]; ours: unknown[] }[] = [];
  for (const ms of at) {
    clock.at(ms);
    rows.push({ ms, theirs: await answer(memory.url), ours: await answer(floodgate.url) });
  }
  expect(rows.map(({ ms, ours: r }) => [ms, ...r])).toEqual(rows.map(({ ms, theirs: r }) => [ms, ...r]));
  return rows.map((r) => r.theirs[0]);
}

test.each([
  ['no blockDuration (0)', { ttl: 3000, limit: 2, blockDuration: 0 }],
  ['a block shorter than the ttl', { ttl: 4500, limit: 2, blockDuration: 900 }],
  ['the block the guard defaults to (the ttl)', { ttl: 1500, limit: 1 }],
  ['a block longer than the ttl', { ttl: 1200, limit: 2, blockDuration: 4500 }],
])('through ThrottlerGuard, headers and refusals as throttler: %s', async (_label, throttler) => {
  const at = [0, 10, 20, 250, 400, 600, 610, 620, 1100, 1500, 1900, 2300, 2310, 2320, 4000].map((ms) => ms * 3);
  const statuses = await throughGuard([throttler], at);
  expect(statuses).toContain(429);
});

test('named throttlers each count on their own, and two apps on one Redis share the counts', async () => {
  const prefix = uniquePrefix('throttler-shared');
  const throttlers = [
    // On the real clock: a 'short' of 30 s, which four requests on a loaded machine stay well inside (1 s did not).
    { name: 'short', ttl: 30_000, limit: 3 },
    { name: 'long', ttl: 60_000, limit: 5 },
  ];
  const a = await throttledApp('express', floodgateStorage({ prefix }), throttlers);
  const b = await throttledApp('express', floodgateStorage({ prefix }), throttlers);
  closing(a.app);
  closing(b.app);
  const first = await request(a.url).get('/x');
  expect([first.headers['x-ratelimit-remaining-short'], first.headers['x-ratelimit-remaining-long']]).toEqual(['2', '4']);
  expect((await request(b.url).get('/x')).headers['x-ratelimit-remaining-short']).toBe('1');
  expect((await request(a.url).get('/x')).status).toBe(200);
  const denied = await request(b.url).get('/x');
  expect(denied.status).toBe(429);
  expect(Number(denied.headers['retry-after-short'])).toBeGreaterThanOrEqual(1);
});

test("failure 'closed' with Redis unreachable refuses (429) rather than admitting", async () => {
  const down = connect('redis://127.0.0.1:1');
  const storage = new FloodgateThrottlerStorage({ redis: down, failure: 'closed', timeoutMs: 100, logger: { warn: () => undefined } });
  closing({ close: () => storage.onApplicationShutdown() });
  const { app, url } = await throttledApp('express', storage, [{ ttl: 1000, limit: 5 }]);
  closing(app);
  expect((await request(url).get('/x')).status).toBe(429);
  down.disconnect();
});

test('bad options, and a ttl, limit or blockDuration throttler could not mean, are a ConfigError naming it', async () => {
  expect(() => new FloodgateThrottlerStorage({ windowMs: 1000 } as never)).toThrow(expect.objectContaining({ option: 'windowMs' }));
  expect(() => new FloodgateThrottlerStorage({ failure: 'closed' })).toThrow(expect.objectContaining({ option: 'failure' }));
  const storage = floodgateStorage();
  await expect(storage.increment('k', 1000, 0, 0, 'default')).rejects.toMatchObject({ option: 'limit' });
  await expect(storage.increment('k', 1000, 2.5, 0, 'default')).rejects.toMatchObject({ option: 'limit' });
  await expect(storage.increment('k', 0, 5, 0, 'default')).rejects.toMatchObject({ option: 'ttl' });
  await expect(storage.increment('k', 1000, 5, Number.NaN, 'default')).rejects.toMatchObject({ option: 'blockDuration' });
  // The sliding log takes limits up to 1,000; a blockDuration keeps one more hit per key.
  expect((await storage.increment('k', 1000, 1000, 0, 'default')).isBlocked).toBe(false);
  await expect(storage.increment('k', 1000, 1000, 500, 'default')).rejects.toMatchObject({ option: 'limit' });
  expect((await storage.increment('k', 1000, 999, 500, 'big')).isBlocked).toBe(false);
});
