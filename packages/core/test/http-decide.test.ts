import { createLimiter, type HttpOptions } from '@floodgate/core';
import { createHttpLimiter, type HttpOutcome } from '@floodgate/core/adapter';
import { TEST_DEADLINE, closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * HttpLimiter.decide(), the entry point adapters use: a promise when the store must be asked, the outcome
 * itself when the block cache already denies the client (no promise per request for a blocked client),
 * and the same outcome either way.
 */
const redis = connect();
afterAll(closeClients);

interface Req {
  user?: string;
}

const T = Date.UTC(2026, 10, 23, 12, 0, 30);
const limiterFor = (extra: Partial<HttpOptions<Req>> = {}) =>
  createHttpLimiter<Req>(
    // A first connection on a loaded machine can take longer than the default 250 ms: the test's deadline.
    {
      redis,
      prefix: uniquePrefix('decide'),
      algorithm: 'fixed-window',
      clock: () => T,
      limits: { limit: 1, window: '1m' },
      ...TEST_DEADLINE,
      ...extra,
    },
    [],
    (r) => r.user,
  );

const isPromise = (x: unknown): x is Promise<HttpOutcome> => x instanceof Promise;

test('asks Redis with a promise until the client is denied, then answers from the block cache without one', async () => {
  const http = limiterFor();
  try {
    const first = http.decide({}, '10.0.0.1');
    expect(isPromise(first)).toBe(true);
    const allowed = await first;
    expect(allowed.action).toBe('next');
    // RateLimit and RateLimit-Policy are list headers: several limiters on one response add to them.
    expect(allowed.append).toEqual([
      ['RateLimit-Policy', '"1m";q=1;w=60'],
      ['RateLimit', '"1m";r=0;t=30'],
    ]);
    expect(allowed.decision?.remaining).toBe(0);

    const second = http.decide({}, '10.0.0.1');
    expect(isPromise(second)).toBe(true);
    const fromRedis = await second;
    expect(fromRedis.decision?.source).toBe('redis');

    const third = http.decide({}, '10.0.0.1');
    expect(isPromise(third)).toBe(false);
    const fromCache = third as HttpOutcome;
    expect(fromCache.decision?.source).toBe('cache');

    for (const o of [fromRedis, fromCache]) {
      expect(o.action).toBe('deny');
      expect(o.status).toBe(429);
      expect(o.json).toBe(JSON.stringify(o.body));
    }
    // What a client sees is the same whichever answered.
    expect(fromCache.set).toEqual(fromRedis.set);
    expect(fromCache.append).toEqual(fromRedis.append);
    expect(fromCache.body).toEqual(fromRedis.body);
    expect(fromCache.set).toContainEqual(['Retry-After', '30']);

    // Another client is not denied by the first one's cache entry: it goes to Redis.
    expect(isPromise(http.decide({}, '10.0.0.2'))).toBe(true);
  } finally {
    await http.limiter.close();
  }
});

test('an asynchronous option keeps decide() asynchronous even on a cache hit, with the same outcome', async () => {
  const http = limiterFor({ message: async () => ({ error: 'slow_down' }) });
  try {
    await http.decide({}, '10.0.0.3');
    const fromRedis = await http.decide({}, '10.0.0.3');
    const cached = http.decide({}, '10.0.0.3');
    expect(isPromise(cached)).toBe(true);
    const fromCache = await cached;
    expect(fromCache.decision?.source).toBe('cache');
    expect(fromCache.body).toEqual({ error: 'slow_down' });
    // An object body is the app's: Floodgate does not serialise it for the adapter.
    expect(fromCache.json).toBeUndefined();
    expect(fromCache.set).toEqual(fromRedis.set);
  } finally {
    await http.limiter.close();
  }
});

test('a limiter shared through `limiter` answers cache hits synchronously too; errors are outcomes, never throws', async () => {
  const limiter = createLimiter({
    redis,
    prefix: uniquePrefix('decide'),
    algorithm: 'fixed-window',
    clock: () => T,
    limits: { limit: 1, window: '1m' },
  });
  const boom = new Error('identify failed');
  const http = createHttpLimiter<Req>(
    {
      limiter,
      identify: (req, ids) =>
        req.user === 'bad'
          ? (() => {
              throw boom;
            })()
          : ids,
    },
    [],
    (r) => r.user,
  );
  try {
    await http.decide({}, '10.0.0.4');
    await http.decide({}, '10.0.0.4');
    const hit = http.decide({}, '10.0.0.4');
    expect(isPromise(hit)).toBe(false);
    expect((hit as HttpOutcome).action).toBe('deny');

    const failed = http.decide({ user: 'bad' }, '10.0.0.5');
    expect(isPromise(failed)).toBe(false);
    expect(failed as HttpOutcome).toMatchObject({ action: 'error', error: boom });
  } finally {
    await limiter.close();
  }
});

test('a second limiter writes in the draft the first one chose, on an extensible request and on a frozen one', async () => {
  const first = limiterFor({ headers: 'draft-7' });
  const second = limiterFor({ headers: 'draft-8' });
  try {
    for (const req of [{}, Object.freeze({})] as Req[]) {
      const a = await first.decide(req, '10.0.0.7');
      const b = await second.decide(req, '10.0.0.7', a.decision);
      expect(a.set.map(([name]) => name)).toContain('RateLimit');
      // draft-7 syntax from the second limiter too (its policy item): never two syntaxes in one response.
      expect(b.append).toContainEqual(['RateLimit-Policy', '1;w=60']);
      expect([...b.set, ...b.append].every(([name, value]) => name !== 'RateLimit' || value.startsWith('limit='))).toBe(true);
      // A request no limiter saw before gets the limiter's own draft.
      const fresh = await second.decide({}, '10.0.0.8');
      expect(fresh.append).toContainEqual(['RateLimit', '"1m";r=0;t=30']);
    }
  } finally {
    await Promise.all([first.limiter.close(), second.limiter.close()]);
  }
});
