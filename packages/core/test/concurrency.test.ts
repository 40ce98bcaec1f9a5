import Redis from 'ioredis';
import { ArgumentError, ConfigError, createConcurrencyLimiter, type ConcurrencyLimiterOptions, type LimiterEvent } from '@floodgate/core';
import { closeClients, keysUnder, commandStats, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';

/*
 * Concurrency leases (docs/concurrency.md) against the shared test redis-server, and a private one where a
 * test stops or pauses the server or counts commands. Keys are read back with ZCARD/ZRANGE, so every test
 * can fail on what Redis holds, not only on what the limiter says.
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
const redis = connect();

/**
 * A limiter, and `other`: the same limiter in another process (its own connection), for leases this
 * process does not know of. (A process that holds `max` of an identifier's leases itself denies without
 * asking Redis: see the test of that below.)
 */
function make(options: Partial<ConcurrencyLimiterOptions> = {}, client: Redis = redis) {
  const prefix = uniquePrefix('cc');
  // A 10 s deadline unless a test sets its own: `other`'s new connection on a loaded machine may take longer than
  // the default to connect, and the failure policy would answer its first lease.
  const all = { prefix, name: 'api', max: 2, logger: quiet, timeoutMs: 10_000, ...options };
  const limiter = createConcurrencyLimiter({ redis: client, ...all });
  const other = createConcurrencyLimiter({ ...all, redis: connect() });
  const key = (id: string): string => `${limiter.prefix}:${limiter.name}:cc1:{${id}}`;
  return { limiter, other, prefix, key };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('one Redis', () => {
  test('grants up to max per identifier, denies past it, and a release frees the slot', async () => {
    const { limiter, other, key } = make({ max: 2 });
    const a = await other.lease('ip:1.1.1.1');
    const b = await limiter.lease('ip:1.1.1.1');
    expect([a.granted, b.granted]).toEqual([true, true]);
    expect(b).toMatchObject({ source: 'redis', inFlight: 2, max: 2, retryAfterMs: 0 });
    const c = await limiter.lease('ip:1.1.1.1');
    expect(await other.lease('ip:1.1.1.1')).toMatchObject({ granted: false, source: 'redis' });
    expect(c).toMatchObject({ granted: false, source: 'redis', reason: 'concurrency', identifier: 'ip:1.1.1.1', inFlight: 2 });
    expect(c.retryAfterMs).toBeGreaterThan(0);
    expect(c.retryAfterMs).toBeLessThanOrEqual(1000);
    expect(await redis.zcard(key('ip:1.1.1.1'))).toBe(2);
    // Another identifier has its own slots.
    expect((await limiter.lease('ip:2.2.2.2')).granted).toBe(true);
    expect(await a.release()).toBe(true);
    expect(await redis.zcard(key('ip:1.1.1.1'))).toBe(1);
    const d = await limiter.lease('ip:1.1.1.1');
    expect(d.granted).toBe(true);
    await Promise.all([b.release(), d.release()]);
    expect(await redis.exists(key('ip:1.1.1.1'))).toBe(0);
    // Every key has a TTL no shorter than a lease (invariant 4: garbage collection only).
    const e = await limiter.lease('ip:3.3.3.3');
    const ttl = await redis.pttl(key('ip:3.3.3.3'));
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await e.release();
  });

  test('all or nothing: one full identifier denies the lease and leaves the others untouched', async () => {
    const { limiter, other, key } = make({ max: 1 });
    const user = await other.lease('user:alice');
    expect(user.granted).toBe(true);
    const both = await limiter.lease(['ip:10.0.0.1', 'user:alice', 'ip:10.0.0.1']);
    expect(both).toMatchObject({ granted: false, identifier: 'user:alice' });
    expect(await redis.exists(key('ip:10.0.0.1'))).toBe(0);
    await user.release();
    const again = await limiter.lease(['ip:10.0.0.1', 'user:alice']);
    expect(again).toMatchObject({ granted: true, inFlight: 1 });
    expect(await redis.zcard(key('ip:10.0.0.1'))).toBe(1);
    expect(await redis.zcard(key('user:alice'))).toBe(1);
    expect(await again.release()).toBe(true);
    expect(await redis.exists(key('ip:10.0.0.1'), key('user:alice'))).toBe(0);
  });

  test('a lease released twice is a no-op the second time; a denied lease releases nothing', async () => {
    const { limiter, other, key } = make({ max: 1 });
    const held = await limiter.lease('ip:1.1.1.1');
    const denied = await other.lease('ip:1.1.1.1');
    expect(denied.source).toBe('redis');
    expect(await denied.release()).toBe(false);
    expect(await redis.zcard(key('ip:1.1.1.1'))).toBe(1);
    expect(await held.release()).toBe(true);
    const next = await other.lease('ip:1.1.1.1');
    expect(await held.release()).toBe(false);
    // The second release of `held` did not free `next`'s slot.
    expect(await redis.zcard(key('ip:1.1.1.1'))).toBe(1);
    expect(await limiter.lease('ip:1.1.1.1')).toMatchObject({ granted: false, source: 'redis' });
    expect(await next.release()).toBe(true);
  });

  test('a release after expiry does not remove the newer holder (test clock)', async () => {
    const clock = { now: 1_800_000_000_000 };
    const { limiter, other, key } = make({ max: 1, leaseMs: 1000, clock: () => clock.now });
    const old = await other.lease('ip:1.1.1.1');
    clock.now += 999;
    expect((await limiter.lease('ip:1.1.1.1')).granted).toBe(false);
    clock.now += 1;
    // At exactly its expiry the old lease no longer holds the slot.
    const newer = await limiter.lease('ip:1.1.1.1');
    expect(newer.granted).toBe(true);
    expect(await old.release()).toBe(false);
    const members = await redis.zrange(key('ip:1.1.1.1'), '0', '-1', 'WITHSCORES');
    expect(members).toHaveLength(2);
    expect(Number(members[1])).toBe(clock.now + 1000);
    expect((await other.lease('ip:1.1.1.1')).granted).toBe(false);
    expect(await newer.release()).toBe(true);
  });

  test('a process that holds max leases of an identifier denies the next one itself, without a script', async () => {
    const { limiter, key } = make({ max: 2 });
    const held = [await limiter.lease('ip:1.1.1.1'), await limiter.lease(['user:u', 'ip:1.1.1.1'])];
    const denied = await limiter.lease(['user:u', 'ip:1.1.1.1']);
    expect(denied).toMatchObject({ granted: false, source: 'local', reason: 'concurrency', identifier: 'ip:1.1.1.1', inFlight: 2 });
    expect(await redis.zcard(key('user:u'))).toBe(1);
    await held[0]!.release();
    expect((await limiter.lease(['user:u', 'ip:1.1.1.1'])).source).toBe('redis');
  });

  test('a process that dies holding leases gives them back after leaseMs (Redis TIME)', async () => {
    const dying = connect();
    const prefix = uniquePrefix('cc');
    const options = { prefix, name: 'api', max: 2, leaseMs: 400, logger: quiet };
    const a = createConcurrencyLimiter({ ...options, redis: dying });
    expect((await Promise.all([a.lease('ip:9.9.9.9'), a.lease('ip:9.9.9.9')])).every((l) => l.granted)).toBe(true);
    dying.disconnect();
    const b = createConcurrencyLimiter({ ...options, redis: connect() });
    expect((await b.lease('ip:9.9.9.9')).granted).toBe(false);
    await sleep(450);
    const after = await b.lease('ip:9.9.9.9');
    expect(after.granted).toBe(true);
    // The expired members were removed by the script: only the new lease is left.
    expect(await redis.zcard(`${prefix}:api:cc1:{ip:9.9.9.9}`)).toBe(1);
    await after.release();
  });

  test('two limiters on separate connections share max: 2 x 60 concurrent leases, max 5, exactly 5 granted', async () => {
    const prefix = uniquePrefix('cc');
    const options = { prefix, name: 'api', max: 5, timeoutMs: 2_000, logger: quiet };
    const limiters = [
      createConcurrencyLimiter({ ...options, redis: connect() }),
      createConcurrencyLimiter({ ...options, redis: connect() }),
    ];
    const leases = await Promise.all(limiters.flatMap((l) => Array.from({ length: 60 }, () => l.lease(['ip:7.7.7.7', 'user:u1']))));
    const granted = leases.filter((l) => l.granted);
    expect(granted).toHaveLength(5);
    expect(await redis.zcard(`${prefix}:api:cc1:{ip:7.7.7.7}`)).toBe(5);
    expect((await Promise.all(granted.map((l) => l.release()))).every(Boolean)).toBe(true);
    expect(await redis.exists(`${prefix}:api:cc1:{ip:7.7.7.7}`, `${prefix}:api:cc1:{user:u1}`)).toBe(0);
  });

  test('hostile identifiers get keys of their own, inside their hash tag', async () => {
    const { limiter, prefix } = make({ max: 1 });
    const hostile = [
      'ip:1.1.1.1}',
      '{ip:1.1.1.1}',
      'ip:1.1.1.1 ',
      'x'.repeat(65),
      'x'.repeat(64),
      '\ud800',
      '\udc00',
      'ключ',
      '#',
      '*',
      'a:b}{c',
    ];
    const leases = await Promise.all(hostile.map((id) => limiter.lease(id)));
    expect(leases.every((l) => l.granted)).toBe(true);
    const keys = await keysUnder(redis, prefix);
    expect(new Set(keys).size).toBe(hostile.length);
    for (const k of keys) expect(k).toMatch(/^cc-[0-9a-f]{8}:api:cc1:\{[A-Za-z0-9._:@/#-]{1,64}\}$/);
    await Promise.all(leases.map((l) => l.release()));
  });

  test('bad options are a ConfigError naming the option, at construction; bad identifiers reject', async () => {
    for (const max of [0, -1, 1.5, '5', undefined, 100_001, NaN, Infinity]) {
      expect(() => createConcurrencyLimiter({ max } as unknown as ConcurrencyLimiterOptions)).toThrow(
        expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'max' }),
      );
    }
    for (const leaseMs of [0, -5, 1.5, 'abc', '2d', 86_400_001, null]) {
      expect(() => createConcurrencyLimiter({ max: 1, leaseMs } as unknown as ConcurrencyLimiterOptions)).toThrow(
        expect.objectContaining({ option: 'leaseMs' }),
      );
    }
    expect(() => createConcurrencyLimiter({ max: 1, timeoutMs: 0 })).toThrow(expect.objectContaining({ option: 'timeoutMs' }));
    expect(() => createConcurrencyLimiter({ max: 1, failure: 'sometimes' as 'open' })).toThrow(
      expect.objectContaining({ option: 'failure' }),
    );
    expect(() => createConcurrencyLimiter({ max: 1, limits: [] } as unknown as ConcurrencyLimiterOptions)).toThrow(ConfigError);
    expect(() => createConcurrencyLimiter(null as unknown as ConcurrencyLimiterOptions)).toThrow(
      expect.objectContaining({ option: 'options' }),
    );
    const polluted = Object.create({ max: 5 }) as ConcurrencyLimiterOptions;
    expect(() => createConcurrencyLimiter(polluted)).toThrow(expect.objectContaining({ option: 'max' }));
    const { limiter } = make();
    await expect(limiter.lease([])).rejects.toThrow(ArgumentError);
    await expect(limiter.lease(['ok', ''])).rejects.toThrow(ArgumentError);
    await expect(limiter.lease(Array.from({ length: 65 }, (_, i) => `id:${i}`))).rejects.toThrow(ArgumentError);
  });
});

describe('memory store (no Redis): the same semantics from the JavaScript twin', () => {
  test('grant, deny, all or nothing, release twice, expiry', async () => {
    const clock = { now: 1_800_000_000_000 };
    const limiter = createConcurrencyLimiter({ prefix: uniquePrefix('ccm'), max: 2, leaseMs: 1000, clock: () => clock.now });
    const [a, b] = [await limiter.lease('ip:1.1.1.1'), await limiter.lease(['ip:1.1.1.1', 'user:u'])];
    expect([a.source, a.granted, b.granted, b.inFlight]).toEqual(['memory', true, true, 2]);
    const c = await limiter.lease(['user:u', 'ip:1.1.1.1']);
    expect(c).toMatchObject({ granted: false, reason: 'concurrency', identifier: 'ip:1.1.1.1', inFlight: 2, retryAfterMs: 1000 });
    // The denial took nothing from user:u, which has one slot left.
    const d = await limiter.lease('user:u');
    expect(d.granted).toBe(true);
    expect(await a.release()).toBe(true);
    expect(await a.release()).toBe(false);
    clock.now += 1000;
    // b and d expired: their slots are free, and releasing them now frees nothing.
    const fresh = await Promise.all([limiter.lease('user:u'), limiter.lease('user:u')]);
    expect(fresh.map((l) => l.granted)).toEqual([true, true]);
    expect(await b.release()).toBe(false);
    expect((await limiter.lease('user:u')).granted).toBe(false);
  });

  test('limiters without Redis share slots per prefix and name', async () => {
    const prefix = uniquePrefix('ccm');
    const one = createConcurrencyLimiter({ prefix, name: 'x', max: 1 });
    const two = createConcurrencyLimiter({ prefix, name: 'x', max: 1 });
    const other = createConcurrencyLimiter({ prefix, name: 'y', max: 1 });
    const held = await one.lease('ip:1.1.1.1');
    expect((await two.lease('ip:1.1.1.1')).granted).toBe(false);
    expect((await other.lease('ip:1.1.1.1')).granted).toBe(true);
    await held.release();
    expect((await two.lease('ip:1.1.1.1')).granted).toBe(true);
  });
});

describe('Redis unavailable: the failure policy within the deadline; releases never throw', () => {
  let server: StartedRedis;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  test.each([
    ['open', { granted: true, source: 'fallback' }],
    ['closed', { granted: false, source: 'fallback', reason: 'store-unavailable' }],
    ['local', { granted: true, source: 'fallback' }],
  ] as const)('failure: %s', async (failure, expected) => {
    const events: LimiterEvent[] = [];
    const { limiter } = make({ failure, timeoutMs: 100, max: 2, onEvent: (e) => events.push(e) }, connect(`redis://127.0.0.1:1`));
    const started = performance.now();
    const lease = await limiter.lease('ip:1.1.1.1');
    expect(performance.now() - started).toBeLessThan(100 + 100);
    expect(lease).toMatchObject(expected);
    expect(lease.error?.kind).toMatch(/timeout|unavailable/);
    expect(events[0]).toMatchObject({ type: 'store-error', policy: failure });
    if (failure === 'local') {
      // The in-process twin holds the limit in this process.
      expect((await limiter.lease('ip:1.1.1.1')).granted).toBe(true);
      expect((await limiter.lease('ip:1.1.1.1')).granted).toBe(false);
      expect(await lease.release()).toBe(true);
    } else expect(await lease.release()).toBe(false);
  });

  test("failure: 'open' grants at most max per identifier in this process while Redis is away", async () => {
    const { limiter } = make({ failure: 'open', timeoutMs: 100, max: 3 }, connect(`redis://127.0.0.1:1`));
    const leases = await Promise.all(Array.from({ length: 20 }, () => limiter.lease('ip:1.1.1.1')));
    expect(leases.filter((l) => l.granted)).toHaveLength(3);
    expect(leases.filter((l) => !l.granted).every((l) => l.source === 'local')).toBe(true);
    await leases.find((l) => l.granted)!.release();
    expect((await limiter.lease('ip:1.1.1.1')).granted).toBe(true);
  });

  test('a release that cannot reach Redis resolves false and logs once (the lease expires instead)', async () => {
    const own = await startRedis();
    const warnings: string[] = [];
    const client = connect(own.url);
    const { limiter, key } = make({ max: 3, leaseMs: 2_000, timeoutMs: 1_000, logger: { warn: (m) => warnings.push(m) } }, client);
    const leases = await Promise.all([1, 2, 3].map(() => limiter.lease('ip:1.1.1.1')));
    expect(leases.every((l) => l.granted)).toBe(true);
    const admin = connect(own.url);
    expect(await admin.zcard(key('ip:1.1.1.1'))).toBe(3);
    admin.disconnect();
    await own.stop();
    await expect(Promise.all(leases.map((l) => l.release()))).resolves.toEqual([false, false, false]);
    expect(warnings.filter((w) => w.includes('could not release'))).toHaveLength(1);
    client.disconnect();
  });

  test('an acquire that missed its deadline is given back once Redis runs it', async () => {
    const admin = connect(server.url);
    const { limiter, key } = make({ max: 1, timeoutMs: 150, failure: 'closed' }, connect(server.url));
    expect(await (await limiter.lease('ip:5.5.5.5')).release()).toBe(true);
    await admin.client('PAUSE', 400, 'ALL');
    const lease = await limiter.lease('ip:5.5.5.5');
    expect(lease).toMatchObject({ granted: false, reason: 'store-unavailable' });
    await sleep(500);
    // The acquire ran when the pause ended, and the release sent after it on the same connection undid it.
    expect(await admin.exists(key('ip:5.5.5.5'))).toBe(0);
    expect((await limiter.lease('ip:5.5.5.5')).granted).toBe(true);
  });

  test("a client's own flood costs at most max scripts at a time: 400 leases of one client, max 4", async () => {
    const own = await startRedis();
    try {
      const client = connect(own.url);
      const { limiter } = make({ max: 4, timeoutMs: 300 }, client);
      const before = await commandStats(client);
      const leases = await Promise.all(Array.from({ length: 400 }, () => limiter.lease('ip:6.6.6.6')));
      const after = await commandStats(client);
      const scripts = (after.evalsha ?? 0) + (after.eval ?? 0) - (before.evalsha ?? 0) - (before.eval ?? 0);
      expect(leases.filter((l) => l.granted)).toHaveLength(4);
      expect(leases.filter((l) => l.source === 'local')).toHaveLength(396);
      expect(scripts).toBeLessThanOrEqual(4);
      client.disconnect();
    } finally {
      await own.stop();
    }
  });
});
