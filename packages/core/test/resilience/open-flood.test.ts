import type Redis from 'ioredis';
import { createLimiter, type Decision, type Limiter } from '@floodgate/core';
import { closeClients, connect, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/security.md, "'open' admits no flood", against a real redis-server and client: 1,000 checks of one
 * identifier against a limit of 100 per minute, started 5 per turn of the event loop, while the server is
 * frozen (SIGSTOP: connections stay open, nothing is answered, until SIGCONT). Counts only: at most the
 * limit, policy and Redis together. Every variant and state, in virtual time, is
 * test/attacks/open-flood.test.ts (and with units, open-flood-units.test.ts).
 */
afterAll(closeClients);

const LIMIT = 100;
const FLOOD = 1_000;
const CLIENT = 'ip:203.0.113.7';

let server: RedisProcess;
beforeAll(async () => {
  server = await spawnRedis();
});
afterAll(() => server.stop());

function limiterOn(client: Redis, timeoutMs?: number): Limiter {
  return createLimiter({
    redis: client,
    prefix: uniquePrefix('open-flood'),
    limits: { limit: LIMIT, window: '1m' },
    logger: { warn: () => undefined },
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** `n` checks of one client, 5 started per turn of the event loop; `during(i)` runs before the i-th. */
async function flood(limiter: Limiter, n = FLOOD, during?: (i: number) => void): Promise<Decision[]> {
  const checks: Promise<Decision>[] = [];
  for (let i = 0; i < n; i++) {
    during?.(i);
    checks.push(limiter.check(CLIENT));
    if (i % 5 === 4) await new Promise((r) => setImmediate(r));
  }
  return Promise.all(checks);
}

const admitted = (decisions: Decision[]): number => decisions.filter((d) => d.allowed).length;

test('a client connecting to a frozen Redis: the policy admits at most the limit, and Redis nothing past it once it answers', async () => {
  server.freeze();
  const client = connect(server.url);
  const limiter = limiterOn(client, 20);
  try {
    const during = await flood(limiter);
    server.thaw();
    await client.ping();
    const after = await flood(limiter);
    expect(admitted(during) + admitted(after)).toBeLessThanOrEqual(LIMIT);
    expect(admitted(during)).toBeGreaterThan(0);
    expect(during.filter((d) => d.allowed).every((d) => d.source === 'fallback')).toBe(true);
  } finally {
    server.thaw();
    await limiter.close();
  }
});

test('a connected client, Redis frozen in the middle of the flood: nothing admitted past the limit', async () => {
  const client = connect(server.url);
  await client.ping();
  const limiter = limiterOn(client, 50);
  try {
    const decisions = await flood(limiter, FLOOD, (i) => i === FLOOD / 2 && server.freeze());
    server.thaw();
    // (How many each side admitted depends on how far Redis got before the freeze: the scripted tests pin it.)
    expect(admitted(decisions)).toBeLessThanOrEqual(LIMIT);
  } finally {
    server.thaw();
    await limiter.close();
  }
});

test('two units (requests and tokens), Redis frozen in the middle of the flood: nothing admitted past either unit', async () => {
  const client = connect(server.url);
  await client.ping();
  const limiter = createLimiter({
    redis: client,
    prefix: uniquePrefix('open-flood-units'),
    limits: [
      { limit: LIMIT, window: '1m' },
      { limit: 10_000, window: '1m', unit: 'tokens' },
    ],
    timeoutMs: 50,
    logger: { warn: () => undefined },
  });
  // Every third check 400 tokens, the others 40: tokens run out first.
  const costOf = (i: number) => ({ requests: 1, tokens: i % 3 === 0 ? 400 : 40 });
  try {
    const checks: Promise<Decision>[] = [];
    for (let i = 0; i < 600; i++) {
      if (i === 20) server.freeze();
      checks.push(limiter.check(CLIENT, { cost: costOf(i) }));
      if (i % 5 === 4) await new Promise((r) => setImmediate(r));
    }
    const decisions = await Promise.all(checks);
    server.thaw();
    const sum = (unit: 'requests' | 'tokens'): number => decisions.reduce((n, d, i) => n + (d.allowed ? costOf(i)[unit] : 0), 0);
    expect(sum('requests')).toBeLessThanOrEqual(LIMIT);
    expect(sum('tokens')).toBeLessThanOrEqual(10_000);
  } finally {
    server.thaw();
    await limiter.close();
  }
});
