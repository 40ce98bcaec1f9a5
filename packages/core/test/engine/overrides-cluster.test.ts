import { createLimiter, type Limiter } from '@floodgate/core';
import { closeClients, eventually, uniquePrefix, useCluster } from '@floodgate/testing';

/*
 * Overrides on a real local Redis Cluster (docs/overrides.md): the hash and its version share the prefix's
 * slot, so the scripts that write and read them run on one node; a check of identifiers in other slots
 * applies them as on one Redis.
 */
const cluster = useCluster();
afterAll(closeClients);

test('set on one limiter, applied by another within refreshMs, for checks spanning slots', async () => {
  const prefix = uniquePrefix('ovc');
  const make = (): Limiter =>
    createLimiter({
      redis: cluster.client,
      prefix,
      name: 'api',
      algorithm: 'fixed-window',
      failure: 'closed',
      timeoutMs: 2_000,
      limits: { free: { limit: 2, window: '1h' }, pro: { limit: 9, window: '1h' } },
      overrides: { refreshMs: 100 },
    });
  const [a, b] = [make(), make()];
  try {
    expect((await b.peek(['ip:10.0.0.1', 'user:alice'])).limit).toBe(2);
    await a.overrides.set('user:alice', { plan: 'pro' });
    await a.overrides.set('tenant:t1', { limits: { limit: 4, window: '1h' } });
    expect(await eventually(async () => (await b.peek('user:alice')).limit, 9, 2_000)).toBe(9);
    expect((await b.check(['ip:10.0.0.1', 'user:alice'])).states.map((s) => s.limit)).toEqual([9, 9]);
    expect((await b.check(['tenant:t1', 'user:alice'])).states.map((s) => s.limit)).toEqual([4, 4]);
    expect((await b.overrides.list()).map((o) => o.identifier)).toEqual(['tenant:t1', 'user:alice']);
    expect(await a.overrides.delete('user:alice')).toBe(true);
    expect(await eventually(async () => (await b.peek('user:alice')).limit, 2, 2_000)).toBe(2);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
