import { createLimiter } from '../../src/engine/limiter';
import { MemoryStore } from '../../src/stores/memory';

test('without redis, the memory store decides, with the same decision shape', async () => {
  const limiter = createLimiter({ prefix: 'mem-shape', algorithm: 'fixed-window', limits: { limit: 2, window: '1h' } });
  const d = await limiter.check(['ip:1.2.3.4', 'user:1']);
  expect(d).toMatchObject({ allowed: true, source: 'memory', remaining: 1, limit: 2 });
  await limiter.check('ip:1.2.3.4');
  expect(await limiter.check('ip:1.2.3.4')).toMatchObject({ allowed: false, reason: 'limit', source: 'memory' });
  await limiter.close();
});

test('memory stays bounded: expired entries are swept as writes go on', async () => {
  let now = 1_700_000_000_000;
  const store = new MemoryStore();
  let largest = 0;
  // 20 rounds of 5,000 new keys that live 1 s each, 2 s apart: 100,000 keys written, 5,000 live at a time.
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 5000; i++) {
      store.set(`r${round}:${i}`, i, 1000, now);
      largest = Math.max(largest, store.size);
    }
    now += 2000;
  }
  // A sweep runs after as many writes as there are entries: never more than twice the live keys (+1024).
  expect(largest).toBeLessThanOrEqual(2 * 5000 + 1024);
  expect(store.get('r19:1', now - 2000)).toBe(1);
  expect(store.get('r0:1', now)).toBeUndefined();
});

test('an injected clock drives windows, blocks and expiry', async () => {
  let now = Date.UTC(2026, 0, 1);
  const limiter = createLimiter({ clock: () => now, algorithm: 'fixed-window', limits: { limit: 1, window: '1m' } });
  expect((await limiter.check('ip:1')).allowed).toBe(true);
  expect((await limiter.check('ip:1')).retryAfterMs).toBe(60_000);
  now += 60_000;
  expect((await limiter.check('ip:1')).allowed).toBe(true);
  await limiter.block('ip:1', { duration: '5s', reason: 'test' });
  now += 60_000;
  expect((await limiter.check('ip:1')).allowed).toBe(true);
  await limiter.block('ip:1', { duration: '5s' });
  now += 4_000;
  expect(await limiter.check('ip:1')).toMatchObject({ allowed: false, reason: 'blocked', retryAfterMs: 1_000 });
  await limiter.close();
});
