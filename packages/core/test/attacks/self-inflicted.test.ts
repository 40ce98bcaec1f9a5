import { createLimiter, type Decision, type LimiterEvent } from '@floodgate/core';
import { closeClients, commandStats, connect, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/security.md, "Self-inflicted fail-open": a client's own traffic never buys it admissions. Each test
 * gets its own redis-server (commands are counted, and one test fills Redis with slow scripts).
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
let server: RedisProcess;
beforeEach(async () => {
  server = await spawnRedis();
});
afterEach(() => server.stop());

test.each([250, 50])(
  '6,000 concurrent checks of one identifier in one process, timeoutMs %i: exactly the limit admitted',
  async (timeoutMs) => {
    const client = connect(server.url);
    await client.ping();
    const limiter = createLimiter({
      redis: client,
      prefix: uniquePrefix('flood'),
      limits: { limit: 100, window: '1m' },
      timeoutMs,
      logger: quiet,
    });
    const decisions = await Promise.all(Array.from({ length: 6_000 }, () => limiter.check('ip:203.0.113.7')));
    // Before: the back of 6,000 scripts in flight ran out the deadline and took the policy ('open'):
    // 939 admitted in one run of the review; 5,712 here with timeoutMs 50 (100 with 250, on a quiet machine).
    // Never more than the limit. (Exactly the limit on a quiet machine; on a starved one some checks in
    // flight run out the deadline as overload, which sheds them: fewer, never more.)
    expect(decisions.filter((d) => d.allowed).length).toBeLessThanOrEqual(100);
    expect(decisions.filter((d) => d.allowed).length).toBeGreaterThan(0);
    expect(decisions.filter((d) => d.allowed && d.source !== 'redis')).toHaveLength(0);
    // No more than the limit's worth in flight at once, so a few hundred scripts, not 6,000.
    const stats = await commandStats(connect(server.url));
    expect(stats.evalsha ?? 0).toBeLessThan(1_000);
    await limiter.close();
  },
);

test("a deadline run out by this process's own backlog is overload, never an admission by the policy", async () => {
  // 4,000 checks at once, each of 16 identifiers x 3 rules, with a deadline Redis cannot meet for all of
  // them: Redis keeps answering (replies leave it every few ms), but each script is heavy enough that this
  // process sends them faster than Redis runs them, and the last are answered well after 20 ms.
  const events: LimiterEvent[] = [];
  const client = connect(server.url);
  await client.ping();
  const limiter = createLimiter({
    redis: client,
    prefix: uniquePrefix('backlog'),
    algorithm: 'fixed-window',
    limits: [
      { limit: 5, window: '1s' },
      { limit: 50, window: '1m' },
      { limit: 500, window: '1h' },
    ],
    timeoutMs: 20,
    logger: quiet,
    onEvent: (e) => events.push(e),
  });
  const decisions = await Promise.all(
    Array.from({ length: 4_000 }, (_, i) => limiter.check(Array.from({ length: 16 }, (_, j) => `user:${i}-${j}`))),
  );
  const late = decisions.filter((d) => d.source === 'fallback');
  expect(late.length).toBeGreaterThan(0);
  expect(late.every((d) => !d.allowed && d.reason === 'store-unavailable' && d.error?.kind === 'overload')).toBe(true);
  // Overload is not a connection fault: the breaker stays closed and the next check is Redis's.
  expect(events.some((e) => e.type === 'store-error' && e.error.kind === 'circuit-open')).toBe(false);
  // ...so, once Redis has worked through the backlog (a PING queued behind it), another limiter on the
  // same client (whose breaker is shared) is answered by Redis.
  await client.ping();
  const other = createLimiter({ redis: client, prefix: uniquePrefix('other'), limits: { limit: 5, window: '1m' }, logger: quiet });
  expect((await other.check('ip:192.0.2.1')).source).toBe('redis');
  await Promise.all([limiter.close(), other.close()]);
});

test("one limiter's error replies do not open the breaker that every limiter on the client shares", async () => {
  const client = connect(server.url);
  const prefix = uniquePrefix('wrongtype');
  const broken = createLimiter({ redis: client, prefix, name: 'broken', limits: { limit: 5, window: '1m' }, logger: quiet });
  const healthy = createLimiter({ redis: client, prefix, name: 'healthy', limits: { limit: 5, window: '1m' }, logger: quiet });
  // A key of the wrong type under the broken limiter's state key: its script fails with WRONGTYPE.
  await client.set(`${prefix}:broken:sw2:{ip:1.1.1.1}`, 'not a hash');
  const errors: Decision[] = [];
  for (let i = 0; i < 20; i++) errors.push(await broken.check('ip:1.1.1.1'));
  // 'open' admits the identifier's limit (5) from this process, five error replies, then denies it here
  // without sending anything (docs/security.md, "'open' admits no flood").
  expect(errors.slice(0, 5).every((d) => d.allowed && d.source === 'fallback' && d.error?.kind === 'reply')).toBe(true);
  expect(errors.slice(5).every((d) => !d.allowed && d.source === 'local' && d.reason === 'limit')).toBe(true);
  // Before: 5 error replies opened the breaker and every limiter on this client failed open.
  expect((await healthy.check('ip:2.2.2.2')).source).toBe('redis');
  await Promise.all([broken.close(), healthy.close()]);
});

test('penalty: an identifier the cache knows is over its limit stays denied while Redis is paused', async () => {
  const client = connect(server.url);
  const admin = connect(server.url);
  const limiter = createLimiter({
    redis: client,
    prefix: uniquePrefix('known'),
    penalty: true,
    limits: { limit: 3, window: '1m' },
    timeoutMs: 50,
    logger: quiet,
  });
  for (let i = 0; i < 4; i++) await limiter.check('ip:203.0.113.50');
  expect(await limiter.check('ip:203.0.113.50')).toMatchObject({ allowed: false, source: 'redis' });
  await admin.call('CLIENT', 'PAUSE', '600', 'ALL');
  const during = await Promise.all(Array.from({ length: 20 }, () => limiter.check('ip:203.0.113.50')));
  // Before: penalty turned the cache off, so these took the policy ('open': admitted).
  expect(during.every((d) => !d.allowed && d.reason === 'limit')).toBe(true);
  // An identifier nobody knows about takes the policy as documented ('open').
  expect(await limiter.check('ip:192.0.2.9')).toMatchObject({ allowed: true, source: 'fallback' });
  await new Promise((r) => setTimeout(r, 700));
  await limiter.close();
});
