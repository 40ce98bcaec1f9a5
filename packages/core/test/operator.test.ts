import { createLimiter } from '@floodgate/core';
import { registryKey, topKey } from '../src/scripts/keys';
import { TOP_KEEP } from '../src/engine/operator';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * What a limiter keeps for the command line (engine/operator.ts, docs/cli.md) on a real Redis: the registry entry,
 * and the denial sample, bounded.
 */
afterAll(closeClients);
const redis = connect();
const quiet = { warn: () => undefined };

async function sampleOf(prefix: string): Promise<Map<string, number>> {
  const minute = Math.floor(Date.now() / 60_000);
  const out = new Map<string, number>();
  for (const m of [minute - 1, minute]) {
    const pairs = (await redis.call('ZRANGE', topKey(prefix, m), '0', '-1', 'WITHSCORES')) as [string, string][];
    for (const [id, n] of pairs) out.set(id, (out.get(id) ?? 0) + Number(n));
  }
  return out;
}

test('the registry entry describes the limiter (algorithm, plans, lockout), kept 30 days', async () => {
  const prefix = uniquePrefix('op');
  const limiter = createLimiter({
    redis,
    prefix,
    name: 'api',
    algorithm: 'token-bucket',
    limits: { free: [{ limit: 10, window: '1m', burst: 20 }], pro: [{ limit: 100, window: '1m', for: 'user' }] },
    lockout: { after: 3, within: '1m', duration: '10m', scope: ['ip', 'user'] },
    logger: quiet,
  });
  await limiter.check('user:1');
  expect(JSON.parse((await redis.hget(registryKey(prefix), 'api'))!)).toEqual({
    v: 1,
    algorithm: 'token-bucket',
    plans: { free: [{ limit: 10, window: 60_000, burst: 20 }], pro: [{ limit: 100, window: 60_000, for: 'user', burst: 100 }] },
    lockout: { after: 3, within: 60_000, duration: 600_000, backoff: 1, maxDuration: 600_000, scope: ['ip', 'user'] },
    colocate: false,
  });
  const ttl = await redis.pttl(registryKey(prefix));
  expect(ttl).toBeGreaterThan(29 * 86_400_000);
  expect(ttl).toBeLessThanOrEqual(30 * 86_400_000);
  await limiter.close();
});

test('peeks and a limiter on a test clock write neither the registry nor the sample', async () => {
  const prefix = uniquePrefix('op');
  const peeking = createLimiter({ redis, prefix, name: 'peek', limits: { limit: 1, window: '1m' }, logger: quiet });
  for (let i = 0; i < 3; i++) await peeking.peek('ip:1', { cost: 2 });
  const clocked = createLimiter({
    redis,
    prefix,
    name: 'clock',
    limits: { limit: 1, window: '1m' },
    logger: quiet,
    clock: () => Date.now(),
  });
  for (let i = 0; i < 3; i++) await clocked.check('ip:1');
  await peeking.close();
  await clocked.close();
  expect(await redis.exists(registryKey(prefix))).toBe(0);
  expect((await sampleOf(prefix)).size).toBe(0);
});

test(`the denial sample counts each denial a check gave, and at most ${TOP_KEEP} identifiers per flush`, async () => {
  const prefix = uniquePrefix('op');
  const limiter = createLimiter({
    redis,
    prefix,
    name: 'tight',
    // Sliding, not fixed: a fixed window of 1 min starts again at each minute, so a minute that began between
    // the admissions and the burst below admitted the burst again (745 identifiers in the sample, not
    // 1,000, in one full run). A sliding window denies every check within a minute of its admission.
    algorithm: 'sliding-window',
    limits: { limit: 1, window: '1m' },
    // 1,200 checks at once: each must be Redis's denial, not a deadline missed on a loaded machine (240 of
    // 1,200 reached the sample in one full run at the default 250 ms).
    timeoutMs: 10_000,
    logger: quiet,
  });
  const ids = Array.from({ length: 1_200 }, (_, i) => `ip:10.8.${i >> 8}.${i & 255}`);
  for (const id of ids) await limiter.check(id); // admitted: nothing to count yet
  // 3 denials of one identifier (from Redis, then from the block cache: denials all the same).
  for (let i = 0; i < 4; i++) await limiter.check('ip:10.9.9.9');
  // Then 1,200 identifiers denied once each: past the cap, new identifiers of this flush are not counted.
  await Promise.all(ids.map((id) => limiter.check(id)));
  await limiter.close();
  const sample = await sampleOf(prefix);
  expect(sample.size).toBe(TOP_KEEP);
  expect(sample.get('ip:10.9.9.9')).toBe(3);
  // The first 999 of the 1,200 made it (each denied once); the last 201 came after the cap.
  expect(sample.get(ids[0]!)).toBe(1);
  expect(sample.get(ids[998]!)).toBe(1);
  expect(sample.has(ids[999]!)).toBe(false);
});
