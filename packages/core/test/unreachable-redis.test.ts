import Redis from 'ioredis';
import { createClient } from 'redis';
import { createLimiter, type Decision } from '@floodgate/core';
import { freePort, scripted, uniquePrefix } from '@floodgate/testing';
import { adapterOf } from '../src/stores/clients';

/*
 * A quick start with nothing listening where its Redis should be: the limiter says so once, in its own
 * words (which Redis, with the password masked; why; what its failure policy does meanwhile), repeats it at
 * most once a minute with counts while it lasts, and the application's ioredis client no longer prints
 * "[ioredis] Unhandled error event" on every reconnection (docs/operating.md, "When Redis cannot be reached").
 */
const SECRET = 'hunter2-not-for-logs';

/** Resolves after the client has failed to connect `n` more times (each failure is followed by 'reconnecting'). */
async function reconnections(client: Redis, n: number): Promise<void> {
  // Not events.once: it rejects at the 'error' that comes first, which is what the test is about.
  for (let i = 0; i < n; i++) await new Promise((resolve) => client.once('reconnecting', resolve));
}

describe('an ioredis client with nothing listening on its port', () => {
  let printed: jest.SpyInstance;
  beforeEach(() => {
    printed = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => printed.mockRestore());

  test("one warning naming the Redis (password masked), the cause and what 'open' does; no unhandled-error noise", async () => {
    const port = await freePort();
    // disconnectTimeout: ioredis's disconnect() of a client that never connected keeps a 2 s timer otherwise.
    const client = new Redis(`redis://:${SECRET}@127.0.0.1:${port}`, { disconnectTimeout: 100 });
    const warnings: string[] = [];
    const limiter = createLimiter({
      redis: client,
      name: 'api',
      prefix: uniquePrefix('unreach'),
      limits: { limit: 3, window: '10s' },
      failure: 'open',
      timeoutMs: 100,
      // Held still: what 'open' admits is counted per window, and a real 10 s window could end mid-test.
      clock: () => Date.UTC(2031, 0, 1, 0, 0, 3),
      logger: { warn: (m) => void warnings.push(m) },
    });
    const decisions: Decision[] = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.check('ip:203.0.113.7'));
    // What the trial's quick start answered: 'open' admits up to the rule's limit from this process.
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    await reconnections(client, 2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(`^floodgate: limiter 'api' cannot reach its Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port} \\(connect ECONNREFUSED`),
    );
    expect(warnings[0]).toContain("failure policy 'open' admits the requests it cannot decide, up to each rule's limit per identifier");
    expect(warnings.join('\n')).not.toContain(SECRET);
    // Floodgate listens for the client's errors, so ioredis has nothing unhandled to print.
    expect(printed.mock.calls.filter((args) => String(args[0]).includes('[ioredis]'))).toEqual([]);
    expect(client.listenerCount('error')).toBe(1);
    await limiter.close();
    client.disconnect();
  });

  test("a client with its own 'error' listener is left as it is", async () => {
    const port = await freePort();
    const client = new Redis(port, '127.0.0.1', { disconnectTimeout: 100 });
    const seen: unknown[] = [];
    client.on('error', (err) => seen.push(err));
    const limiter = createLimiter({
      redis: client,
      prefix: uniquePrefix('unreach'),
      limits: { limit: 3, window: '10s' },
      timeoutMs: 100,
      logger: { warn: () => undefined },
    });
    await limiter.check('ip:1');
    await reconnections(client, 1);
    expect(client.listenerCount('error')).toBe(1);
    expect(seen.length).toBeGreaterThan(0);
    await limiter.close();
    client.disconnect();
  });
});

test('the address a warning names: from the client options, never the password', () => {
  const options = { lazyConnect: true };
  expect(adapterOf(new Redis(`rediss://ops:${SECRET}@10.0.0.1:6390/2`, options)).address).toBe('rediss://ops:***@10.0.0.1:6390/2');
  expect(adapterOf(new Redis(6391, 'cache.internal', options)).address).toBe('redis://cache.internal:6391');
  expect(
    adapterOf(
      new Redis.Cluster(
        [
          { host: 'n1', port: 7000 },
          { host: 'n2', port: 7001 },
        ],
        { lazyConnect: true, redisOptions: { password: SECRET } },
      ),
    ).address,
  ).toBe('redis://:***@n1:7000 (a Cluster of 2 startup nodes)');
  // node-redis: its URL, masked (no listener is added: node-redis throws an 'error' nobody listens to, by design).
  const nodeRedis = createClient({ url: `redis://ops:${SECRET}@10.0.0.2:6379/1?password=${SECRET}` });
  expect(adapterOf(nodeRedis).address).toBe('redis://ops:***@10.0.0.2:6379/1');
  expect(nodeRedis.listenerCount('error')).toBe(0);
});

test('while the outage lasts: at most one line a minute, with the count of checks the policy decided', async () => {
  const warnings: string[] = [];
  const { store, rt, limiter } = scripted({
    name: 'api',
    prefix: uniquePrefix('unreach'),
    limits: { limit: 1000, window: '1h' },
    failure: 'closed',
    logger: { warn: (m) => void warnings.push(m) },
  });
  store.behave({ error: 'unavailable' });
  for (let i = 0; i < 4; i++) await limiter.check(`ip:10.0.0.${i}`);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(
    /^floodgate: limiter 'api' cannot reach its Redis \(.*\)\. Until it can, failure policy 'closed' denies them/,
  );
  await rt.advance(59_000);
  await limiter.check('ip:10.0.1.1');
  expect(warnings).toHaveLength(1);
  await rt.advance(1_000);
  await limiter.check('ip:10.0.1.2');
  expect(warnings).toHaveLength(2);
  expect(warnings[1]).toBe(
    "floodgate: limiter 'api' still cannot reach its Redis: 5 checks decided by failure policy 'closed' in the last 60 s (repeated at most once a minute while it lasts)",
  );
  // It answers again: the outage is over, and the next one is said from the start.
  store.behave({ answer: 0 });
  await rt.advance(60_000);
  expect((await rt.until(limiter.check('ip:10.0.2.1'))).source).toBe('redis');
  store.behave({ error: 'unavailable' });
  await limiter.check('ip:10.0.2.2');
  expect(warnings).toHaveLength(3);
  expect(warnings[2]).toMatch(/cannot reach its Redis \(/);
});
