import Redis from 'ioredis';
import { ArgumentError, StoreError, createLimiter, type AlgorithmName, type Decision, type LimiterOptions } from '@floodgate/core';
import { closeClients, commandStats, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';

/*
 * limiter.refund(decision) (issue 14, refunds): gives back exactly what an admitted check consumed, only
 * to the windows or buckets it was taken from, at most once, in one store call. The random sequences
 * against the JavaScript twins are in model.test.ts, and against a split Cluster check in
 * cluster-equivalence.test.ts; these are the rules, one by one.
 */
afterAll(closeClients);

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];
const quiet = { warn: () => undefined };
const redis = connect();

function limiter(store: 'redis' | 'memory', options: Partial<LimiterOptions> = {}) {
  return createLimiter({
    prefix: uniquePrefix('refund'),
    limits: { limit: 3, window: '1m' },
    refunds: true,
    logger: quiet,
    // `timeoutMs` and `failure` are a Redis store's options: the memory store cannot fail.
    ...(store === 'redis' ? { redis, timeoutMs: 2_000, failure: 'closed' as const } : {}),
    ...options,
  });
}

describe.each(ALGORITHMS)('%s', (algorithm) => {
  test.each(['redis', 'memory'] as const)('on %s: a refund gives back exactly what the check took, once', async (store) => {
    const l = limiter(store, { algorithm });
    const first = await l.check('ip:1', { cost: 2 });
    expect(first.allowed).toBe(true);
    expect((await l.peek('ip:1')).remaining).toBe(1);
    expect(await l.refund(first)).toBe(true);
    expect((await l.peek('ip:1')).remaining).toBe(3);
    // A second refund of the same decision gives nothing.
    expect(await l.refund(first)).toBe(false);
    expect((await l.peek('ip:1')).remaining).toBe(3);
    await l.close();
  });

  test.each(['redis', 'memory'] as const)('on %s: every identifier and rule of the check gets its units back', async (store) => {
    const l = limiter(store, {
      algorithm,
      limits: [
        { limit: 3, window: '1m' },
        { limit: 10, window: '1h' },
        { limit: 2, window: '1m', for: 'user' },
      ],
    });
    const d = await l.check(['ip:1', 'user:a']);
    expect(d.states).toHaveLength(5);
    expect(await l.refund(d)).toBe(true);
    const after = await l.peek(['ip:1', 'user:a']);
    expect(after.states.map((s) => s.remaining)).toEqual([3, 10, 3, 10, 2]);
    await l.close();
  });
});

describe('what refunds nothing', () => {
  test.each(['redis', 'memory'] as const)('on %s: denied, peeked, cost 0, unscoped identifiers', async (store) => {
    const l = limiter(store, { limits: { limit: 1, window: '1m', for: 'user' } });
    const admitted = await l.check('user:a');
    const denied = await l.check('user:a');
    expect(denied.allowed).toBe(false);
    expect(await l.refund(denied)).toBe(false);
    expect(await l.refund(await l.peek('user:a'))).toBe(false);
    expect(await l.refund(await l.check('user:b', { cost: 0 }))).toBe(false);
    // No rule applies to ip:1: nothing was consumed, so nothing to give back.
    expect(await l.refund(await l.check('ip:1'))).toBe(false);
    expect(await l.refund(admitted)).toBe(true);
    await l.close();
  });

  test('with penalty, a denial that consumed is not refunded', async () => {
    const l = limiter('redis', { limits: { limit: 1, window: '1m' }, penalty: true, blockCache: false });
    await l.check('ip:1');
    const denied = await l.check('ip:1');
    expect(denied.allowed).toBe(false);
    expect(await l.refund(denied)).toBe(false);
    await l.close();
  });

  test("another limiter's decision, a copy, a made-up object, and a limiter without refunds", async () => {
    const a = limiter('redis');
    const b = limiter('redis');
    const plain = limiter('redis', { refunds: false });
    const d = await a.check('ip:1');
    expect(await b.refund(d)).toBe(false);
    expect(await a.refund({ ...d })).toBe(false);
    expect(await plain.refund(await plain.check('ip:1'))).toBe(false);
    expect(plain.refunds).toBe(false);
    expect(a.refunds).toBe(true);
    for (const bad of [undefined, null, 'ip:1', 3]) await expect(a.refund(bad as unknown as Decision)).rejects.toThrow(ArgumentError);
    // The decision is still a's to refund.
    expect(await a.refund(d)).toBe(true);
    expect((await a.peek('ip:1')).remaining).toBe(3);
    for (const l of [a, b, plain]) await l.close();
  });

  test('a decision of the block cache or of the failure policy', async () => {
    const l = limiter('redis', { limits: { limit: 1, window: '1m' } });
    await l.check('ip:1');
    await l.check('ip:1');
    const cached = await l.check('ip:1');
    expect(cached.source).toBe('cache');
    expect(await l.refund(cached)).toBe(false);
    await l.close();

    const dead = new Redis(1, '127.0.0.1', {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 100,
    });
    dead.on('error', () => undefined);
    for (const failure of ['open', 'local'] as const) {
      const f = createLimiter({
        redis: dead,
        prefix: uniquePrefix('rf'),
        limits: { limit: 3, window: '1m' },
        refunds: true,
        failure,
        timeoutMs: 50,
        logger: quiet,
      });
      const d = await f.check('ip:1');
      expect(d.allowed).toBe(true);
      expect(d.source).toBe('fallback');
      expect(await f.refund(d)).toBe(false);
      await f.close();
    }
    dead.disconnect();
  });
});

describe('a refund never creates budget the algorithm would not have had', () => {
  test.each(['redis', 'memory'] as const)('on %s: units taken in a window that has since rolled over stay spent', async (store) => {
    let now = Date.UTC(2030, 0, 1, 0, 0, 10);
    const l = limiter(store, { algorithm: 'fixed-window', clock: () => now });
    const old = await l.check('ip:1', { cost: 3 });
    now += 60_000; // the next window
    for (let k = 0; k < 3; k++) expect((await l.check('ip:1')).allowed).toBe(true);
    expect(await l.refund(old)).toBe(true);
    // The old window's units are not the new window's: still 3 of 3 used.
    expect((await l.check('ip:1')).allowed).toBe(false);
    await l.close();
  });

  test.each(['redis', 'memory'] as const)(
    'on %s: sliding-window gives back to its own bucket only while the window holds it',
    async (store) => {
      let now = Date.UTC(2030, 0, 1, 0, 0, 10);
      const l = limiter(store, { algorithm: 'sliding-window', limits: { limit: 3, window: '1m', precision: 6 }, clock: () => now });
      const old = await l.check('ip:1', { cost: 3 });
      now += 120_000; // two windows on: the bucket it was taken from has left the ring
      for (let k = 0; k < 3; k++) expect((await l.check('ip:1')).allowed).toBe(true);
      await l.refund(old);
      expect((await l.check('ip:1')).allowed).toBe(false);
      await l.close();
    },
  );

  test.each(['redis', 'memory'] as const)('on %s: token-bucket gives back only while no later check drew on the bucket', async (store) => {
    const now = Date.UTC(2030, 0, 1, 0, 0, 10);
    const l = limiter(store, { algorithm: 'token-bucket', limits: { limit: 3, window: '1m' }, clock: () => now });
    const a = await l.check('ip:1');
    const b = await l.check('ip:1');
    // a's increment is under b's: giving it back would have to move b's too (scripts/token-bucket.ts explains).
    expect(await l.refund(a)).toBe(true);
    expect((await l.peek('ip:1')).remaining).toBe(1);
    expect(await l.refund(b)).toBe(true);
    expect((await l.peek('ip:1')).remaining).toBe(2);
    await l.close();
  });
});

/*
 * A key's incarnation (src/scripts/incarnation.ts) is given by a refundable check; keys written without
 * one (by a limiter without refunds, or by an earlier release) keep their counts, and a limiter without
 * refunds sharing the keys keeps the incarnation when it writes, trims or re-dates them.
 */
describe.each(ALGORITHMS)('%s: keys shared with a limiter without refunds', (algorithm) => {
  test('its counts are kept, and its writes keep the incarnation the refunds need', async () => {
    let now = Date.UTC(2030, 0, 1, 0, 0, 10, 100);
    const shared = { algorithm, prefix: uniquePrefix('mixed'), name: 'mixed', limits: { limit: 2, window: '1s' }, clock: () => now };
    const plain = limiter('redis', { ...shared, refunds: false });
    const refundable = limiter('redis', shared);
    expect((await plain.check('ip:1')).allowed).toBe(true);
    expect((await refundable.check('ip:1')).allowed).toBe(true);
    expect((await plain.check('ip:1')).allowed).toBe(false);
    // The next second: the plain limiter re-dates, trims (sliding log) and re-expires the key after the
    // refundable one gave it its incarnation.
    now += 1_500;
    expect((await plain.check('ip:1')).allowed).toBe(true);
    const d = await refundable.check('ip:1');
    expect(d.allowed).toBe(true);
    expect((await plain.check('ip:1')).allowed).toBe(false);
    expect(await refundable.refund(d)).toBe(true);
    expect((await plain.check('ip:1')).allowed).toBe(true);
    await plain.close();
    await refundable.close();
  });
});

test('at most once, also when two refunds of one decision race', async () => {
  const l = limiter('redis');
  const d = await l.check('ip:1', { cost: 2 });
  const results = await Promise.all([l.refund(d), l.refund(d), l.refund(d)]);
  expect(results.filter(Boolean)).toHaveLength(1);
  expect((await l.peek('ip:1')).remaining).toBe(3);
  await l.close();
});

test('a refund clears a denial the block cache remembered for those identifiers', async () => {
  const l = limiter('redis', { limits: { limit: 1, window: '1m' } });
  const d = await l.check('ip:1');
  expect((await l.check('ip:1')).allowed).toBe(false);
  expect(await l.refund(d)).toBe(true);
  const again = await l.check('ip:1');
  expect(again.allowed).toBe(true);
  expect(again.source).toBe('redis');
  await l.close();
});

describe('on a private server', () => {
  let server: StartedRedis;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = connect(server.url);
  });
  afterAll(() => server.stop());

  test('one round trip: one script call per refund, whatever the identifiers and rules', async () => {
    const l = createLimiter({
      redis: client,
      prefix: uniquePrefix('rt'),
      limits: [
        { limit: 3, window: '1m' },
        { limit: 9, window: '1h' },
      ],
      refunds: true,
    });
    const d = await l.check(['ip:1', 'user:a', 'key:k']);
    await client.config('RESETSTAT');
    expect(await l.refund(d)).toBe(true);
    const stats = await commandStats(client);
    expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBe(1);
    await l.close();
  });

  test('a refund the store cannot take in time rejects with a StoreError by the deadline, and is never sent again', async () => {
    const l = createLimiter({
      redis: client,
      prefix: uniquePrefix('rp'),
      limits: { limit: 3, window: '1m' },
      refunds: true,
      timeoutMs: 100,
    });
    const d = await l.check('ip:1');
    const admin = connect(server.url);
    await admin.client('PAUSE', 600, 'ALL');
    const started = performance.now();
    await expect(l.refund(d)).rejects.toThrow(StoreError);
    expect(performance.now() - started).toBeLessThan(400);
    // Not retried: the decision is spent.
    expect(await l.refund(d)).toBe(false);
    await new Promise((r) => setTimeout(r, 700));
    await l.close();
  });
});
