import { createLimiter, type Decision, type LimiterEvent } from '@floodgate/core';
import { closeClients, commandStats, connect, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/security.md, "Self-inflicted fail-open", against a real redis-server: a client's own traffic never
 * buys it admissions. Each test gets its own redis-server (commands are counted, and one test fills Redis
 * with slow scripts). Counts and outcomes only; the same reactions deadline by deadline, in virtual time,
 * are test/attacks/self-inflicted.test.ts.
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
let server: RedisProcess;
beforeEach(async () => {
  server = await spawnRedis();
});
afterEach(() => server.stop());

test('6,000 concurrent checks of one identifier in one process: exactly the limit admitted, by Redis, with a few hundred scripts', async () => {
  const client = connect(server.url);
  await client.ping();
  // A deadline no load on this machine reaches: the subject is Redis's count under concurrency and the units
  // in flight, not the deadline (in virtual time: test/attacks/self-inflicted.test.ts).
  const limiter = createLimiter({
    redis: client,
    prefix: uniquePrefix('flood'),
    limits: { limit: 100, window: '1m' },
    timeoutMs: 5_000,
    logger: quiet,
  });
  const decisions = await Promise.all(Array.from({ length: 6_000 }, () => limiter.check('ip:203.0.113.7')));
  expect(decisions.filter((d) => d.allowed).length).toBe(100);
  expect(decisions.filter((d) => d.allowed && d.source !== 'redis')).toHaveLength(0);
  // No more than the limit's worth in flight at once, so a few hundred scripts, not 6,000.
  const stats = await commandStats(connect(server.url));
  expect(stats.evalsha ?? 0).toBeLessThan(1_000);
  await limiter.close();
});

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
}, 120_000); // 4,000 heavy checks: a loaded machine takes far longer than jest's default 30 s

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

test('penalty: an identifier the cache knows is over its limit stays denied while Redis is frozen', async () => {
  const client = connect(server.url);
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
  server.freeze();
  try {
    const during = await Promise.all(Array.from({ length: 20 }, () => limiter.check('ip:203.0.113.50')));
    // Before: penalty turned the cache off, so these took the policy ('open': admitted).
    expect(during.every((d) => !d.allowed && d.reason === 'limit')).toBe(true);
    // An identifier nobody knows about takes the policy as documented ('open'), unless this process was too
    // starved to send it in the first half of its deadline (overload, denied).
    const other = await limiter.check('ip:192.0.2.9');
    expect(other.source).toBe('fallback');
    if (other.error?.kind === 'timeout') expect(other.allowed).toBe(true);
  } finally {
    server.thaw();
  }
  await limiter.close();
});
