import { createLimiter, type Limiter, type LimiterOptions, type RedisClient } from '@floodgate/core';
import { MemoryStore } from '../../src/stores/memory';
import { closeClients, collectGarbage, connect, spawnRedis, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { liveBlockCaches } from '../../src/engine/block-cache';
import { registeredNames } from '../../src/engine/registry';

/*
 * docs/security.md, "Unbounded memory": identifiers are chosen by clients (IPs, user names typed into a
 * login form), so nothing kept per identifier may grow without bound, and a limiter nobody holds is freed.
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
const ip = (i: number): string => `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

test('the memory store keeps at most memory.maxKeys identifiers, forgetting the least recently used', async () => {
  const limiter = createLimiter({ prefix: uniquePrefix('lru'), memory: { maxKeys: 1_000 }, limits: { limit: 1, window: '1h' } });
  expect((await limiter.check('ip:192.0.2.1')).allowed).toBe(true);
  expect((await limiter.check('ip:192.0.2.1')).allowed).toBe(false);
  for (let i = 0; i < 5_000; i++) {
    await limiter.check(ip(i));
    // The victim is used now and then: recently used entries stay.
    if (i % 500 === 0) expect((await limiter.check('ip:192.0.2.1')).allowed).toBe(false);
  }
  const store = (limiter as unknown as { store: MemoryStore }).store;
  expect(store.size).toBeLessThanOrEqual(1_000);
  // The oldest ones were forgotten: an under-limit for them (a fresh budget), never a crash.
  expect((await limiter.check(ip(0))).allowed).toBe(true);
  await limiter.close();
});

test("a store full of other identifiers does not make a busy client's checks costlier: its entry is not moved at every use", async () => {
  // Moving a key to the end of a Map (delete, then set) at every use left a deleted slot in its hash chain
  // until V8 compacted the table: with 100,000 other identifiers, each check of a busy client walked its own
  // past copies (215 µs, against 2 µs alone; bench/results/ab/crowded-ledger.md). Moves are counted here, not
  // timed: two busy clients, 2,000 checks among 10,000 other identifiers.
  const limiter = createLimiter({ prefix: uniquePrefix('busy'), limits: { limit: 1e9, window: '1h' } });
  for (let i = 0; i < 10_000; i++) await limiter.check(ip(i));
  const states = (limiter as unknown as { store: { states: Map<string, unknown> } }).store.states;
  const moves = jest.spyOn(states, 'delete');
  for (let i = 0; i < 2_000; i++) expect((await limiter.check(i % 2 === 0 ? 'ip:192.0.2.1' : 'ip:192.0.2.2')).allowed).toBe(true);
  // At most once per half the store's size of puts each (a move every check was 2 per check: 4,000).
  expect(moves.mock.calls.length).toBeLessThanOrEqual(4);
  moves.mockRestore();
  await limiter.close();
});

test('a flood of new identifiers never evicts a block', async () => {
  const limiter = createLimiter({ prefix: uniquePrefix('lrub'), memory: { maxKeys: 100 }, limits: { limit: 5, window: '1h' } });
  await limiter.block('user:mallory', { duration: '1h', reason: 'abuse' });
  for (let i = 0; i < 2_000; i++) await limiter.check(ip(i));
  expect(await limiter.check('user:mallory')).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'abuse' });
  await limiter.close();
});

test("failure: 'local' while Redis is down: the local limiter is bounded too", async () => {
  const server = await spawnRedis();
  const client = connect(server.url, { retryStrategy: () => 60_000 });
  const limiter = createLimiter({
    ...TEST_DEADLINE,
    redis: client,
    prefix: uniquePrefix('loc'),
    failure: 'local',
    memory: { maxKeys: 500 },
    limits: { limit: 3, window: '1h' },
    logger: quiet,
  });
  await limiter.check('ip:192.0.2.1');
  await server.stop();
  await new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < 3_000; i++) expect((await limiter.check(ip(i))).source).toBe('fallback');
  // The 'local' policy's store, made at the first failure (engine/failure.ts).
  const local = (limiter as unknown as { failures: { localStore: MemoryStore } }).failures.localStore;
  expect(local.size).toBeLessThanOrEqual(500);
  await limiter.close();
  client.disconnect();
});

/** The options of a limiter built per request and never closed (the leak these tests mount). */
const lost = (redis: RedisClient, prefix: string) =>
  ({ ...TEST_DEADLINE, redis, prefix, name: 'per-request', limits: { limit: 1, window: '1h' }, logger: quiet }) satisfies LimiterOptions;

/** Resolves the promise an unreachable sentinel was registered with, when V8 runs the cleanup that found it dead. */
const sentinels = new FinalizationRegistry<() => void>((resolve) => resolve());

/**
 * One full collection, and the cleanup task it queued run: awaited on a sentinel object that dies in it, not on
 * a timer. (A collection only queues FinalizationRegistry callbacks; the counts drop when they have run.)
 */
async function collectAndFinalize(): Promise<void> {
  const finalized = new Promise<void>((resolve) => sentinels.register({}, resolve));
  collectGarbage();
  await finalized;
  // V8 runs one registry's callbacks per cleanup task: let the other registries' tasks queued with it run too.
  await new Promise((r) => setImmediate(r));
}

/** Collects until `count` stops changing (or reaches `target`): at most 20 collections, however slow the machine. */
async function afterCollection(count: () => number, target?: number): Promise<number> {
  let last = -1;
  for (let round = 0; round < 20 && (target === undefined ? count() !== last : count() !== target); round++) {
    last = count();
    await collectAndFinalize();
  }
  return count();
}

/**
 * Mounts the leak: `count` limiters built per request and never closed, each used by `use`. They are held
 * while they are made (as their requests would), with collections in between, as a busy process has them, so
 * the first assertion cannot be turned by when the collector runs; then nothing holds them, and both counts
 * must come back to where they were.
 */
async function mountLeak(
  count: number,
  make: () => Limiter,
  use: (l: Limiter, i: number) => Promise<void>,
  cachesEach: number,
): Promise<void> {
  const cachesBefore = await afterCollection(liveBlockCaches);
  const namesBefore = registeredNames();
  const held: Limiter[] = [];
  // In a function of its own: a suspended async function keeps its locals, so `l` here would hold the last one.
  const perRequest = async (i: number): Promise<void> => {
    const l = make();
    held.push(l);
    await use(l, i);
  };
  for (let i = 0; i < count; i++) {
    await perRequest(i);
    if (i % 10 === 9) await afterCollection(liveBlockCaches);
  }
  expect(liveBlockCaches()).toBeGreaterThanOrEqual(cachesBefore + count * cachesEach);
  held.length = 0;
  await afterCollection(() => liveBlockCaches() + registeredNames(), cachesBefore + namesBefore);
  expect(liveBlockCaches()).toBe(cachesBefore);
  expect(registeredNames()).toBe(namesBefore);
}

test('limiters nobody holds are collected: no registry keeps them, and their name is free again', async () => {
  const redis = connect();
  const prefix = uniquePrefix('gc');
  // Each with a denial in its block cache.
  await mountLeak(
    200,
    () => createLimiter({ ...lost(redis, prefix) }),
    async (l, i) => {
      await l.check(`ip:198.51.100.${i}`);
      await l.check(`ip:198.51.100.${i}`);
    },
    1,
  );
  // Before: the name stayed taken by the 200 lost limiters, so other rules under it were refused.
  const again = createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'per-request', limits: { limit: 9, window: '1m' }, logger: quiet });
  await again.close();
});

test('limiters with overrides nobody holds are collected too: their refresh timer holds them weakly', async () => {
  const redis = connect();
  const prefix = uniquePrefix('gc-overrides');
  // Each makes its default plan's block cache and its override's.
  await mountLeak(
    20,
    () => createLimiter({ ...lost(redis, prefix), overrides: { refreshMs: 100 } }),
    async (l, i) => {
      await l.overrides.set(`user:${i}`, { limits: { limit: 1, window: '1m' } });
      await l.check(`user:${i}`);
      await l.check(`user:${i}`);
    },
    2,
  );
  await redis.del(`${prefix}:!o:{${prefix}}:per-request`, `${prefix}:!ov:{${prefix}}:per-request`);
});
