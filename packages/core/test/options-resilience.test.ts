import { ConfigError, createLimiter, type LimiterOptions } from '@floodgate/core';

test.each<[Partial<LimiterOptions>, string]>([
  [{ blockCache: { max: 0 } }, 'blockCache.max'],
  [{ blockCache: { max: 1.5 } }, 'blockCache.max'],
  [{ blockCache: { size: 10 } as never }, 'blockCache.size'],
  [{ blockCache: true as never }, 'blockCache'],
  [{ cluster: 'colocate' as never }, 'cluster'],
  [{ cluster: { colocate: 1 } as never }, 'cluster.colocate'],
  [{ cluster: { colocated: true } as never }, 'cluster.colocated'],
])('%p is a ConfigError naming %s', (extra, option) => {
  const make = () => createLimiter({ limits: { limit: 1, window: 1000 }, ...extra });
  expect(make).toThrow(ConfigError);
  expect(() => make()).toThrow(expect.objectContaining({ option }));
});

test('valid resilience options are accepted', () => {
  expect(() => createLimiter({ limits: { limit: 1, window: 1000 }, blockCache: { max: 5 }, cluster: { colocate: true } })).not.toThrow();
  expect(() => createLimiter({ limits: { limit: 1, window: 1000 }, name: 'off', blockCache: false })).not.toThrow();
});
