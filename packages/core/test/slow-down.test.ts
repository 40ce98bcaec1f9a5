import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventEmitter } from 'node:events';
import { ConfigError, createLimiter, type Decision, type LimiterOptions } from '@floodgate/core';
import { createHttpLimiter, createHttpSlowDown, type SlowDownHttpOptions, type SlowDownOutcome } from '@floodgate/core/adapter';
import { delayOf, usedOf } from '../src/http/http-slow-down';
import { settled } from '@floodgate/core/testing';
import { closeClients, connect, leavingGet, liveTimers, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';
import { pause } from '../src/http/node';

/*
 * slowDown's shared HTTP layer (issue 14, item 5), with no framework: the count a decision carries, the
 * delay formula and its cap, bad options, and the attacks a delay invites, over a real node:http server
 * (clients that leave during their delay, a flood of them, the store going away). The adapters' side is in
 * @floodgate/testing's policyConformance.
 */
const redis = connect();
afterAll(closeClients);

type Req = IncomingMessage;
const base = (extra: Partial<SlowDownHttpOptions<Req>> = {}): SlowDownHttpOptions<Req> => ({
  redis,
  prefix: uniquePrefix('sd'),
  limits: { limit: 5, window: '1m' },
  ...extra,
});

const decision = (d: Partial<Decision>): Decision => ({
  allowed: true,
  source: 'redis',
  limit: 5,
  windowMs: 60_000,
  remaining: 4,
  resetMs: 60_000,
  retryAfterMs: 0,
  cost: 1,
  states: [],
  ...d,
});

describe('the count and the delay', () => {
  test('used is the binding rule count, this request included; past the limit, limit + cost', () => {
    expect(usedOf(decision({ remaining: 4 }))).toBe(1);
    expect(usedOf(decision({ remaining: 0 }))).toBe(5);
    expect(usedOf(decision({ allowed: false, reason: 'limit', remaining: 0, cost: 2 }))).toBe(7);
    // No count known: an admission (failure 'open', no rule) is not delayed; a local denial gets the longest delay.
    expect(usedOf(decision({ limit: Infinity, remaining: Infinity }))).toBe(0);
    expect(usedOf(decision({ allowed: false, source: 'local', limit: Infinity, remaining: 0 }))).toBe(Infinity);
  });

  test('delayOf: nothing up to delayAfter, then delayMs (number, function, default) capped by maxDelayMs', async () => {
    const req = {} as Req;
    const delays = { delayAfter: 2, delayMs: undefined, maxDelayMs: 30_000 };
    expect(delayOf(delays, 2, req)).toBe(0);
    expect(delayOf(delays, 3, req)).toBe(1_000);
    expect(delayOf(delays, 5, req)).toBe(3_000);
    expect(delayOf(delays, 1_000, req)).toBe(30_000);
    expect(delayOf(delays, Infinity, req)).toBe(30_000);
    expect(delayOf({ ...delays, delayMs: 250 }, 9, req)).toBe(250);
    expect(delayOf({ ...delays, delayMs: (used: number) => used * 1.5 }, 3, req)).toBe(5);
    expect(delayOf({ ...delays, delayMs: () => Infinity }, 3, req)).toBe(30_000);
    await expect(delayOf({ ...delays, delayMs: async () => 70 }, 3, req)).resolves.toBe(70);
    for (const bad of [-1, Number.NaN, '5', undefined, null]) {
      expect(() => delayOf({ ...delays, delayMs: () => bad as number }, 3, req)).toThrow(TypeError);
    }
    await expect(delayOf({ ...delays, delayMs: async () => -1 }, 3, req)).rejects.toThrow(TypeError);
  });

  test.each([
    [{ delayAfter: -1 }, 'delayAfter'],
    [{ delayAfter: '1' }, 'delayAfter'],
    [{ delayAfter: 6 }, 'delayAfter'],
    [{ delayMs: -1 }, 'delayMs'],
    [{ delayMs: Number.NaN }, 'delayMs'],
    [{ delayMs: {} }, 'delayMs'],
    [{ maxDelayMs: -1 }, 'maxDelayMs'],
    [{ maxDelayMs: 1.5 }, 'maxDelayMs'],
    [{ maxDelayMs: 600_001 }, 'maxDelayMs'],
    [{ delayAfter: 1, windowMs: 1000 }, 'windowMs'],
  ])('bad option %j is a ConfigError naming %s', (extra, option) => {
    const attempt = () => createHttpSlowDown<Req>(base(extra as Partial<SlowDownHttpOptions<Req>>));
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(expect.objectContaining({ option }));
  });

  test('delayAfter up to the largest limit of any plan is accepted (the request past the limit is slowed)', () => {
    const http = createHttpSlowDown<Req>(
      base({ limits: { free: [{ limit: 2, window: '1m' }], pro: [{ limit: 8, window: '1m' }] }, delayAfter: 8 }),
    );
    return http.limiter.close();
  });
});

/** A node:http server whose every request goes through `http.run`, then to a handler that counts itself. */
async function serve(
  options: SlowDownHttpOptions<Req>,
): Promise<{ url: string; hits: () => number; outcomes: SlowDownOutcome[]; close(): Promise<void> }> {
  const http = createHttpSlowDown<Req>(options);
  let hits = 0;
  const outcomes: SlowDownOutcome[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void http.run(req, req.socket.remoteAddress, res).then((outcome) => {
      outcomes.push(outcome);
      if (outcome.action === 'gone') return;
      if (outcome.action !== 'next') return void res.writeHead(outcome.status).end(outcome.action);
      hits++;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    outcomes,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await http.limiter.close();
    },
  };
}

const get = (url: string): Promise<{ status: number; ms: number }> =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    httpRequest(url, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started }));
    })
      .on('error', reject)
      .end();
  });

describe('over real sockets', () => {
  test('a flood of clients that leave during their delays: every timer cleared, no handler, every request counted', async () => {
    let delayed = 0;
    let allDelayed!: () => void;
    const everyDelay = new Promise<void>((resolve) => (allDelayed = resolve));
    const delayMs = (): number => {
      if (++delayed === 40) allDelayed();
      return 20_000;
    };
    const options = base({ limits: { limit: 100, window: '1m' }, delayAfter: 0, delayMs, maxDelayMs: 60_000 });
    const app = await serve(options);
    const probe = createLimiter({ redis, prefix: options.prefix!, limits: options.limits as LimiterOptions['limits'], blockCache: false });
    try {
      const before = liveTimers();
      const clients = Array.from({ length: 40 }, () => leavingGet(app.url, '/'));
      await everyDelay;
      await new Promise((r) => setImmediate(r)); // each delay's timer is set a promise callback later
      expect(liveTimers()).toBeGreaterThanOrEqual(40); // one per delay
      for (const client of clients) client.leave();
      // The server has seen every client leave during its delay (settled() waits for each delay to end).
      await settled();
      // A delay timer left behind would live 20 s.
      expect(liveTimers()).toBeLessThanOrEqual(before);
      expect(app.hits()).toBe(0);
      expect(app.outcomes).toHaveLength(40);
      expect(app.outcomes.every((o) => o.action === 'gone' && o.info?.delayMs === 20_000)).toBe(true);
      // Leaving early gives nothing back: all 40 stay counted.
      expect((await probe.peek('ip:127.0.0.1')).remaining).toBe(60);
    } finally {
      await probe.close();
      await app.close();
    }
  });

  test('pause: resolves false at once when the response is already closed', async () => {
    const closed = { closed: true, destroyed: true, writableEnded: false } as unknown as ServerResponse;
    await expect(pause(closed, 10_000)).resolves.toBe(false);
  });

  test('the delay a request waited is reported, and requests within delayAfter are not delayed', async () => {
    // A delay far above a request's own time on a loaded machine (the first one connects to Redis too).
    const app = await serve(base({ delayAfter: 1, delayMs: 400 }));
    try {
      const first = await get(app.url);
      const second = await get(app.url);
      expect(first.ms).toBeLessThan(300);
      expect(second.ms).toBeGreaterThanOrEqual(398);
      expect(app.outcomes.map((o) => [o.info?.used, o.info?.delayMs])).toEqual([
        [1, 0],
        [2, 400],
      ]);
    } finally {
      await app.close();
    }
  });

  test('shadow mode enforces nothing: the delay is reported, not waited', async () => {
    const app = await serve(base({ mode: 'shadow', limits: { limit: 1, window: '1m' }, delayAfter: 0, delayMs: 5_000 }));
    try {
      const res = await get(app.url);
      expect(res.ms).toBeLessThan(2_000);
      expect(app.outcomes[0]).toMatchObject({ action: 'next', info: { delayMs: 5_000 } });
    } finally {
      await app.close();
    }
  });

  describe('the store goes away', () => {
    let server: RedisProcess;
    beforeAll(async () => {
      server = await spawnRedis();
    });

    test("failure 'open' lets requests through undelayed (an outage must not slow everyone); 'closed' answers 503", async () => {
      const down = connect(server.url);
      await server.stop();
      const open = await serve(base({ redis: down, failure: 'open', delayAfter: 0, delayMs: 5_000, timeoutMs: 50 }));
      const closed = await serve(base({ redis: down, failure: 'closed', delayAfter: 0, delayMs: 5_000, timeoutMs: 50, name: 'closed' }));
      try {
        const a = await get(open.url);
        expect(a.status).toBe(200);
        expect(a.ms).toBeLessThan(2_000);
        const b = await get(closed.url);
        expect(b.status).toBe(503);
        expect(b.ms).toBeLessThan(2_000);
        expect(closed.hits()).toBe(0);
      } finally {
        await open.close();
        await closed.close();
      }
    });
  });
});

describe('sharing a limiter with rateLimit', () => {
  // A response that stays open: what pause() reads and listens to.
  const OPEN = Object.assign(new EventEmitter(), { closed: false, destroyed: false, writableEnded: false }) as unknown as ServerResponse;

  test.each(['slowDown first', 'rateLimit first'])(
    '%s: one count per request, and the second takes the first decision over',
    async (order) => {
      const limiter = createLimiter({ redis, prefix: uniquePrefix('sd'), limits: { limit: 3, window: '1m' } });
      const slow = createHttpSlowDown<object>({ limiter, delayAfter: 1, delayMs: 1 });
      const limit = createHttpLimiter<object>({ limiter });
      const seen: { used?: number; status: number }[] = [];
      for (let k = 0; k < 5; k++) {
        const req = {};
        if (order === 'slowDown first') {
          const s = await slow.run(req, '192.0.2.1', OPEN);
          const r = await limit.decide(req, '192.0.2.1');
          seen.push({ used: s.info?.used, status: r.action === 'deny' ? r.status : 200 });
        } else {
          const r = await limit.decide(req, '192.0.2.1');
          if (r.action === 'deny') {
            seen.push({ status: r.status });
            continue;
          }
          const s = await slow.run(req, '192.0.2.1', OPEN);
          seen.push({ used: s.info?.used, status: 200 });
        }
      }
      const expected =
        order === 'slowDown first'
          ? [1, 2, 3, 4, 4].map((used, k) => ({ used, status: k < 3 ? 200 : 429 }))
          : [{ used: 1, status: 200 }, { used: 2, status: 200 }, { used: 3, status: 200 }, { status: 429 }, { status: 429 }];
      expect(seen).toEqual(expected);
      expect((await limiter.peek('ip:192.0.2.1')).remaining).toBe(0);
      await limiter.close();
    },
  );

  test('two slowDowns, or two rateLimits, on one limiter each count (several middlewares, one budget)', async () => {
    const limiter = createLimiter({ redis, prefix: uniquePrefix('sd'), limits: { limit: 10, window: '1m' } });
    const a = createHttpSlowDown<object>({ limiter, delayAfter: 5, delayMs: 1 });
    const b = createHttpSlowDown<object>({ limiter, delayAfter: 5, delayMs: 1 });
    const req = {};
    await a.run(req, '192.0.2.1', OPEN);
    await b.run(req, '192.0.2.1', OPEN);
    expect((await limiter.peek('ip:192.0.2.1')).remaining).toBe(8);
    await limiter.close();
  });
});
