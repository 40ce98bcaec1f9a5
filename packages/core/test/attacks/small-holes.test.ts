import Redis from 'ioredis';
import { ConfigError, createLimiter, type Decision } from '@floodgate/core';
import { createHttpLimiter, type HttpOutcome } from '@floodgate/core/adapter';
import { closeClients, freePort, uniquePrefix } from '@floodgate/testing';

/* docs/security.md, "Smaller holes": each was a way past the limiter or a leak; each test failed before its fix. */
afterAll(closeClients);

test('a ConfigError never echoes the password of a Redis URL', () => {
  for (const url of ['redis://:hunter2@cache.internal:6379', 'rediss://app:hunter2@cache.internal:6380/0']) {
    let message = '';
    try {
      createLimiter({ redis: url as never, limits: { limit: 1, window: '1s' } });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/redis/);
    expect(message).not.toContain('hunter2');
  }
  // Any option that quotes a value redacts a URL's credentials too.
  expect(() => createLimiter({ name: 'redis://u:hunter2@h' as never, limits: { limit: 1, window: '1s' } })).toThrow(/redis:\/\/\*\*\*@h/);
});

test('a polluted Object.prototype switches nothing on: options and rules are read as own properties', async () => {
  const proto = Object.prototype as Record<string, unknown>;
  const polluted = { mode: 'shadow', penalty: 'yes', for: 'nobody', burst: 1e9, failure: 'sometimes', timeoutMs: 'never' };
  Object.assign(proto, polluted);
  try {
    const limiter = createLimiter({ prefix: uniquePrefix('proto'), algorithm: 'fixed-window', limits: { limit: 1, window: '1h' } });
    expect(limiter.mode).toBe('enforce');
    expect((await limiter.check('ip:192.0.2.1')).allowed).toBe(true);
    // Before: `for: 'nobody'` from the prototype scoped the rule away (and `mode` made it shadow): allowed.
    expect(await limiter.check('ip:192.0.2.1')).toMatchObject({ allowed: false, reason: 'limit' });
    await limiter.close();
  } finally {
    for (const key of Object.keys(polluted)) delete proto[key];
  }
});

test('a logger (and an onEvent) that throws never turns a store failure into a rejected check', async () => {
  const port = await freePort();
  const redis = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, disconnectTimeout: 100 });
  redis.on('error', () => undefined);
  await redis.connect().catch(() => undefined);
  const throwing = {
    warn: () => {
      throw new Error('logger down');
    },
  };
  for (const failure of ['open', 'closed', 'local'] as const) {
    const limiter = createLimiter({
      redis,
      prefix: uniquePrefix('log'),
      name: failure,
      failure,
      logger: throwing,
      limits: { limit: 5, window: '1m' },
      onEvent: () => {
        throw new Error('listener down');
      },
    });
    // Before: the rejected check.
    const decision = await limiter.check('ip:192.0.2.1');
    expect(decision.source).toBe('fallback');
    expect(decision.allowed).toBe(failure !== 'closed');
    await limiter.close();
  }
  redis.disconnect();
});

test('rule options the algorithm ignores are a ConfigError naming them', () => {
  expect(() => createLimiter({ algorithm: 'fixed-window', limits: { limit: 5, window: '1m', precision: 6 } })).toThrow(
    /limits\[0\]\.precision.*sliding-window/,
  );
  expect(() =>
    createLimiter({
      limits: [
        { limit: 5, window: '1m' },
        { limit: 5, window: '1h', burst: 9 },
      ],
    }),
  ).toThrow(/limits\[1\]\.burst.*token-bucket/);
  expect(() => createLimiter({ algorithm: 'sliding-log', limits: { limit: 5, window: '1m', burst: 9 } })).toThrow(ConfigError);
  expect(() => createLimiter({ algorithm: 'token-bucket', limits: { limit: 5, window: '1m', burst: 9 } })).not.toThrow();
});

test("a static cost is checked against the algorithm's real capacity (a token bucket holds `burst`)", () => {
  const tb = { algorithm: 'token-bucket' as const, limits: { limit: 100, window: '1m', burst: 10 } };
  // Before: accepted (max(limit, burst) = 100), then every request was denied forever.
  expect(() => createHttpLimiter({ ...tb, prefix: uniquePrefix('cap'), cost: 50 })).toThrow(/`cost` 50 exceeds the capacity 10/);
  expect(() => createHttpLimiter({ ...tb, prefix: uniquePrefix('cap'), cost: 10 })).not.toThrow();
});

test('an option function that throws a non-error fails the request instead of passing it on', async () => {
  for (const thrown of [undefined, null, 'route', 0]) {
    const http = createHttpLimiter<object>({
      prefix: uniquePrefix('thr'),
      limits: { limit: 5, window: '1m' },
      identify: () => {
        throw thrown;
      },
    });
    const outcome = await http.run({}, '192.0.2.1');
    // Before: { action: 'error', error: undefined }, and next(undefined) let the request through unlimited.
    expect(outcome.action).toBe('error');
    expect(outcome.error).toBeInstanceOf(Error);
  }
});

test('two limiters with different header drafts on one response: the first draft wins, nothing is overwritten', async () => {
  const a = createHttpLimiter<object>({ prefix: uniquePrefix('hd'), name: 'a', headers: 'draft-8', limits: { limit: 5, window: '1m' } });
  const b = createHttpLimiter<object>({ prefix: uniquePrefix('hd'), name: 'b', headers: 'draft-7', limits: { limit: 2, window: '1m' } });
  const req = {};
  const first = await a.run(req, '192.0.2.1');
  const second = await b.run(req, '192.0.2.1', first.decision as Decision);
  const names = (o: HttpOutcome): string[] => [...o.set, ...o.append].map(([n]) => n);
  // Before: b `set` a draft-7 RateLimit that replaced a's appended draft-8 item, and the policy mixed syntaxes.
  expect(second.set).toEqual([]);
  expect(names(second)).toEqual(['RateLimit-Policy', 'RateLimit']);
  expect(second.append[0]).toEqual(['RateLimit-Policy', '"b-1m";q=2;w=60']);
  expect(second.append[1]![1]).toMatch(/^"b-1m";r=1;t=\d+$/);
  // A request of its own gets b's own draft.
  const alone = await b.run({}, '192.0.2.2');
  expect(alone.set.map(([n]) => n)).toEqual(['RateLimit']);
});
