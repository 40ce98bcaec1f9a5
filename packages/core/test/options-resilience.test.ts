import { ConfigError, createLimiter, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect } from '@floodgate/testing';

afterAll(closeClients);

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
  const redis = connect();
  expect(() =>
    createLimiter({ redis, limits: { limit: 1, window: 1000 }, blockCache: { max: 5 }, cluster: { colocate: true } }),
  ).not.toThrow();
  expect(() => createLimiter({ limits: { limit: 1, window: 1000 }, name: 'off', blockCache: false })).not.toThrow();
});

test.each<[Partial<LimiterOptions>, string]>([
  [{ failure: 'closed' }, 'failure'],
  [{ timeoutMs: 100 }, 'timeoutMs'],
  [{ cluster: { colocate: true } }, 'cluster'],
  [{ redis: undefined, failure: 'local' }, 'failure'],
])('%p without a Redis client is a ConfigError naming %s (it would be ignored by the in-memory store)', (extra, option) => {
  const make = () => createLimiter({ limits: { limit: 1, window: 1000 }, ...extra });
  expect(make).toThrow(expect.objectContaining({ option, message: expect.stringMatching(/no `redis` client/) }));
  // With a client, the same options are taken.
  expect(() => createLimiter({ limits: { limit: 1, window: 1000 }, ...extra, redis: connect() })).not.toThrow();
});

test('the in-memory store without Redis-only options is still a plain `createLimiter({ limits })`', () => {
  expect(() => createLimiter({ limits: { limit: 1, window: 1000 }, memory: { maxKeys: 10 }, penalty: true })).not.toThrow();
});
