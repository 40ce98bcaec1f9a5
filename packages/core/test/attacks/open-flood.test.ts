import type Redis from 'ioredis';
import { createLimiter, type CheckOptions, type Decision, type Limiter, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/security.md, "'open' admits no flood": with `failure: 'open'`, a flood of checks from one client in
 * one process is admitted at most its limit, whatever state the Redis client is in and whatever options
 * the limiter has. Each flood is 1,000 checks of one identifier against a limit of 100 (per minute, so
 * every flood of a test falls in one window), started 5 per event-loop turn as requests arrive, on a
 * private redis-server (CLIENT PAUSE stops every client of a server).
 */
afterAll(closeClients);

const LIMIT = 100;
const FLOOD = 1_000;
const CLIENT = 'ip:203.0.113.7';
const quiet = { warn: () => undefined };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What each variant adds to the limiter, and to each check. */
const variants: Record<string, { options: Partial<LimiterOptions>; check?: CheckOptions }> = {
  plain: { options: {} },
  // Denials never lock the client out within a flood, so the block cache never answers one first.
  lockout: { options: { lockout: { after: 100_000, within: '10m', duration: '15m', scope: ['ip'] } } },
  refunds: { options: { refunds: true } },
  // Every check reaches Redis (the block cache is not asked first).
  penalty: { options: { penalty: true } },
  // The flood under a plan that is not the default one.
  plans: {
    options: { limits: { pro: [{ limit: 10 * LIMIT, window: '1m' }], free: [{ limit: LIMIT, window: '1m' }] } },
    check: { plan: 'free' },
  },
};

/** Admitted per variant and state, printed at the end with FLOODGATE_FLOOD_FIGURES=1 (docs/security.md quotes them). */
const figures: string[] = [];
afterAll(() => {
  if (process.env.FLOODGATE_FLOOD_FIGURES === '1')
    process.stdout.write(`open-flood: admitted of ${FLOOD} per flood (limit ${LIMIT}):\n${figures.join('\n')}\n`);
});

let server: RedisProcess;
beforeAll(async () => {
  server = await spawnRedis();
});
afterAll(() => server.stop());

function limiterOn(client: Redis, variant: keyof typeof variants, timeoutMs?: number): Limiter {
  return createLimiter({
    redis: client,
    prefix: uniquePrefix('open-flood'),
    limits: { limit: LIMIT, window: '1m' },
    logger: quiet,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...variants[variant]!.options,
  });
}

/** `n` checks of one client, 5 started per turn of the event loop: the decisions. */
async function flood(limiter: Limiter, variant: keyof typeof variants, n = FLOOD): Promise<Decision[]> {
  const checks: Promise<Decision>[] = [];
  for (let i = 0; i < n; i++) {
    checks.push(limiter.check(CLIENT, variants[variant]!.check));
    if (i % 5 === 4) await new Promise((r) => setImmediate(r));
  }
  return Promise.all(checks);
}

const admitted = (decisions: Decision[]): number => decisions.filter((d) => d.allowed).length;

/** Resolves once the client is connected (within 10 s). */
async function ready(client: Redis): Promise<void> {
  for (let i = 0; i < 200 && client.status !== 'ready'; i++) await sleep(50);
  expect(client.status).toBe('ready');
}

describe.each(Object.keys(variants))('failure: open, %s', (variant) => {
  test.each([20, undefined])(
    'a client connecting to a paused Redis (timeoutMs %p): the policy admits the limit, and Redis nothing more once it answers',
    async (timeoutMs) => {
      const admin = connect(server.url);
      // Paused for longer than the flood takes: a fresh-clone CI run on a loaded machine outlasted a pause of
      // 1.5 s, and Redis answered the back of the flood (still no more than the limit in all).
      await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
      const client = connect(server.url);
      const limiter = limiterOn(client, variant, timeoutMs);
      const during = await flood(limiter, variant);
      await ready(client);
      const after = await flood(limiter, variant);
      figures.push(
        `${variant}, connecting to a paused Redis, timeoutMs ${timeoutMs ?? 'default'}: ${admitted(during)} + ${admitted(after)}`,
      );
      // Before: the back of the flood was admitted again at every deadline (up to 410 of 1,000 while
      // connecting), and Redis, which never counted them, admitted its full limit on top once it answered.
      expect(admitted(during) + admitted(after)).toBeLessThanOrEqual(LIMIT);
      // 'open' is still open: the checks it could not ask about were admitted, up to the limit.
      expect(admitted(during)).toBeGreaterThan(0);
      expect(during.filter((d) => d.allowed).every((d) => d.source === 'fallback')).toBe(true);
      await limiter.close();
    },
  );

  test('a client that connects during the flood (timeoutMs 5): the limit across both sides of the connect', async () => {
    const client = connect(server.url);
    const limiter = limiterOn(client, variant, 5);
    const decisions = await flood(limiter, variant);
    figures.push(`${variant}, connecting, timeoutMs 5: ${admitted(decisions)}`);
    expect(admitted(decisions)).toBeLessThanOrEqual(LIMIT);
    await limiter.close();
  });

  test('a connected client, Redis paused in the middle of the flood: nothing admitted past the limit', async () => {
    const client = connect(server.url);
    await client.ping();
    const limiter = limiterOn(client, variant, 50);
    const before = await flood(limiter, variant, FLOOD / 2);
    const admin = connect(server.url);
    await admin.call('CLIENT', 'PAUSE', '600', 'ALL');
    const during = await flood(limiter, variant, FLOOD / 2);
    figures.push(`${variant}, connected, paused mid-flood: ${admitted(before)} + ${admitted(during)}`);
    // Before (lockout): Redis's denials were not remembered: the policy admitted 329 to 343 of the paused half.
    expect(admitted(before) + admitted(during)).toBeLessThanOrEqual(LIMIT);
    expect(admitted(before)).toBeGreaterThan(0);
    await sleep(700);
    await limiter.close();
  });

  test('a connected client that used exactly its limit, then Redis paused: nothing more admitted', async () => {
    const client = connect(server.url);
    await client.ping();
    const limiter = limiterOn(client, variant);
    const used = await flood(limiter, variant, LIMIT);
    expect(admitted(used)).toBe(LIMIT);
    const admin = connect(server.url);
    await admin.call('CLIENT', 'PAUSE', '600', 'ALL');
    const during = await flood(limiter, variant);
    figures.push(`${variant}, connected, limit used, then paused: ${admitted(used)} + ${admitted(during)}`);
    // Before: Redis had denied nothing yet, so nothing in this process knew: 'open' admitted 240 to 737 more.
    expect(admitted(during)).toBe(0);
    await sleep(700);
    await limiter.close();
  });

  test('a connected client (default timeoutMs): the limit', async () => {
    const client = connect(server.url);
    await client.ping();
    const limiter = limiterOn(client, variant);
    const decisions = await flood(limiter, variant);
    figures.push(`${variant}, connected: ${admitted(decisions)}`);
    expect(admitted(decisions)).toBeLessThanOrEqual(LIMIT);
    expect(admitted(decisions)).toBeGreaterThan(0);
    await limiter.close();
  });
});

describe("what 'open' still admits", () => {
  test('during an outage every client is admitted up to its limit per window, and the window frees it again', async () => {
    const admin = connect(server.url);
    await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
    const client = connect(server.url);
    const limiter = createLimiter({
      redis: client,
      prefix: uniquePrefix('open-ok'),
      limits: { limit: 10, window: '1s' },
      timeoutMs: 50,
      logger: quiet,
    });
    // 200 clients with one request each: all admitted by the policy, as 'open' promises.
    const many = await Promise.all(Array.from({ length: 200 }, (_, i) => limiter.check(`ip:10.0.${i >> 8}.${i & 255}`)));
    expect(many.every((d) => d.allowed && d.source === 'fallback')).toBe(true);
    // One client's flood: its limit, then a local denial with the time its window frees it.
    const first = await Promise.all(Array.from({ length: 100 }, () => limiter.check(CLIENT)));
    expect(admitted(first)).toBe(10);
    const denied = first.find((d) => !d.allowed)!;
    expect(denied).toMatchObject({ source: 'local', reason: 'limit', identifier: CLIENT });
    expect(denied.retryAfterMs).toBeGreaterThan(0);
    expect(denied.retryAfterMs).toBeLessThanOrEqual(1_000);
    await sleep(1_100);
    const next = await Promise.all(Array.from({ length: 100 }, () => limiter.check(CLIENT)));
    expect(admitted(next)).toBe(10);
    await sleep(2_000);
    await limiter.close();
  });

  test('what it notes per identifier is bounded by memory.maxKeys', async () => {
    const down = await spawnRedis();
    const client = connect(down.url, { retryStrategy: () => 60_000 });
    await client.ping();
    await down.stop();
    const limiter = createLimiter({
      redis: client,
      prefix: uniquePrefix('open-mem'),
      memory: { maxKeys: 500 },
      limits: { limit: 3, window: '1h' },
      logger: quiet,
    });
    for (let i = 0; i < 3_000; i++) expect((await limiter.check(`ip:10.1.${i >> 8}.${i & 255}`)).source).toBe('fallback');
    expect((limiter as unknown as { uncounted: { size: number } }).uncounted.size).toBe(500);
    await limiter.close();
  });
});
