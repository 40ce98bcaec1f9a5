import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import request from 'supertest';
import { createLimiter, type Limiter, type RedisClient, type SettleFailedEvent } from '@floodgate/core';
import { resetWarnings, type Logger } from '@floodgate/core/adapter';
import { settled } from '@floodgate/core/testing';
import { closeClients, connect, keysUnder, storeClient, uniquePrefix } from './clients';
import { capabilitiesOf, type AdapterFactory, type AppSpec, type NeutralOptions, type TestApp } from './conformance';
import { contract, given, restDescribe, test } from './suite-part';
import { deadlineFactory } from './deadline';

/*
 * `cost` per unit and `settle` (docs/budgets.md, "In an HTTP app") as every adapter must behave, over real
 * sockets against a real redis-server: a request counted at its estimate at once, settled when its
 * response ends (a streamed one too, however long), settled still when the client resets mid-stream (at what
 * settle says, never cancelled), and its estimate kept when settle throws. Then the bound under concurrency:
 * ~100 concurrent streamed requests of 300 estimated tokens against 20 requests and 2,000 tokens a minute,
 * settling at random actual costs in [50, 400]. The limiters count in a fixed window on a clock held still,
 * so the counts read from Redis are exact.
 */

const TOKENS = 2_000;
const REQUESTS = 20;
const ESTIMATE = 300;
const NOW = 1_700_000_040_000;

type Req = { headers: IncomingHttpHeaders };

/** GET /stream, reading until `stopAfter` events arrived, then resetting the connection; resolves with what it read. */
function readStream(
  url: string,
  headers: Record<string, string>,
  stopAfter = Infinity,
  onFirst?: () => void,
): Promise<{ status: number; events: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/stream`, { headers });
    req.on('error', reject);
    req.on('response', (res) => {
      let events = 0;
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
        const seen = (body.match(/\n\n/g) ?? []).length;
        if (seen > 0 && events === 0) onFirst?.();
        events = seen;
        if (events >= stopAfter) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, events });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, events }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, events }));
    });
    req.end();
  });
}

/** A seeded generator of integers in [lo, hi] (a linear congruential one): the same run each time. */
function seeded(seed: number): (lo: number, hi: number) => number {
  let state = seed >>> 0;
  return (lo, hi) => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return lo + (state % (hi - lo + 1));
  };
}

export function budgetConformance(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  // A test that reads GET /stream is defined where the adapter serves one (Capabilities.stream).
  const streaming = capabilitiesOf(factory).stream;
  describe(`${factory.name} conformance: budgets (cost per unit, settle)`, () => {
    const redis = connect();
    let store: RedisClient;
    beforeAll(async () => {
      store = await storeClient();
    });
    const apps: TestApp[] = [];
    const limiters: Limiter[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await Promise.all(limiters.splice(0).map((l) => l.close()));
    });
    afterAll(closeClients);

    const budget = (refunds = true, allow: string[] = []): Limiter => {
      const limiter = createLimiter({
        allow,
        redis: store,
        prefix: uniquePrefix(`${factory.name}-budget`),
        algorithm: 'fixed-window',
        limits: [
          { limit: REQUESTS, window: '1m' },
          { limit: TOKENS, window: '1m', unit: 'tokens' },
        ],
        refunds,
        clock: () => NOW,
        timeoutMs: 10_000,
      });
      limiters.push(limiter);
      return limiter;
    };
    const start = async (spec: AppSpec): Promise<TestApp> => {
      const app = await factory.makeApp(spec);
      apps.push(app);
      return app;
    };
    /** Requests and tokens counted for `key:budget` in the window, read from Redis. */
    const counted = async (prefix: string): Promise<{ requests: number; tokens: number }> => {
      const key = (await keysUnder(redis, prefix)).find((k) => k.endsWith('{key:budget}'));
      if (key === undefined) return { requests: 0, tokens: 0 };
      const [requests, tokens] = await redis.hmget(key, '60000', '60000@tokens');
      return { requests: Number(requests ?? 0), tokens: Number(tokens ?? 0) };
    };
    const estimate = { cost: () => ({ requests: 1, tokens: ESTIMATE }), identify: () => 'key:budget' };
    const options = (extra: object): NeutralOptions => ({ ...estimate, ...extra }) as unknown as NeutralOptions;

    given(streaming, contract)(
      'the estimate is counted at once, and a streamed response settles when it ends, giving back what it did not use',
      async () => {
        const limiter = budget();
        const answers: { produced: number }[] = [];
        const produced = new Map<string, number>();
        const app = await start({
          global: options({
            limiter,
            settle: (req: Req) => {
              const n = produced.get(String(req.headers['x-id'])) ?? 0;
              answers.push({ produced: n });
              return { requests: 1, tokens: 10 * n };
            },
          }),
          stream: (headers, n) => produced.set(String(headers['x-id']), n),
        });
        let during: { requests: number; tokens: number } | undefined;
        const first = new Promise<void>((resolve) => {
          void readStream(app.url, { 'x-id': 'a', 'x-events': '20', 'x-every-ms': '15' }, Infinity, () => {
            void counted(limiter.prefix).then((c) => {
              during = c;
              resolve();
            });
          });
        });
        await first;
        expect(during).toEqual({ requests: 1, tokens: ESTIMATE });
        expect(answers).toEqual([]);
        // settled(): the stream has ended and its settle has reached Redis.
        await settled();
        // Settled once, after the last event: 20 events, 200 tokens; 100 of the estimate given back.
        expect(answers).toEqual([{ produced: 20 }]);
        expect(await counted(limiter.prefix)).toEqual({ requests: 1, tokens: 200 });
      },
    );

    test('an own limiter with settle is made refundable; a settle above the estimate charges past the limit and denies the next', async () => {
      const prefix = uniquePrefix(`${factory.name}-budget-own`);
      let settles = 0;
      const app = await start({
        global: options({
          redis: store,
          prefix,
          algorithm: 'fixed-window',
          limits: [
            { limit: REQUESTS, window: '1m' },
            { limit: TOKENS, window: '1m', unit: 'tokens' },
          ],
          settle: () => {
            settles++;
            return { requests: 1, tokens: TOKENS + 500 };
          },
        }),
      });
      expect((await request(app.url).get('/')).status).toBe(200);
      await settled();
      expect(settles).toBe(1);
      expect((await counted(prefix)).tokens).toBe(TOKENS + 500);
      const next = await request(app.url).get('/');
      expect(next.status).toBe(429);
      expect(app.hits()).toBe(1);
    });

    given(streaming, contract)(
      'a client that resets mid-stream is still settled, at what settle says: nothing given back beyond it',
      async () => {
        const limiter = budget();
        const produced = new Map<string, number>();
        const answers: number[] = [];
        const app = await start({
          global: options({
            limiter,
            settle: (req: Req) => {
              const tokens = 10 * (produced.get(String(req.headers['x-id'])) ?? 0);
              answers.push(tokens);
              return { requests: 1, tokens };
            },
          }),
          stream: (headers, n) => produced.set(String(headers['x-id']), n),
        });
        const read = await readStream(app.url, { 'x-id': 'r', 'x-events': '200', 'x-every-ms': '10' }, 3);
        expect(read).toEqual({ status: 200, events: 3 });
        // settled(): the server has seen the reset, and the settle it set off has reached Redis.
        await settled();
        expect(answers).toHaveLength(1);
        const [answer] = answers;
        // Settled at what was produced when the connection closed: some, far from the 200 events asked for.
        expect(answer).toBeGreaterThanOrEqual(30);
        expect(answer).toBeLessThan(ESTIMATE);
        expect(await counted(limiter.prefix)).toEqual({ requests: 1, tokens: answer });
      },
    );

    given(streaming, test).each([
      [
        'throws',
        () => {
          throw new Error('upstream usage missing');
        },
      ],
      ['rejects', () => Promise.reject(new Error('upstream usage missing'))],
      ['answers an invalid cost', () => ({ requests: 1, tokens: -5 })],
      ['leaves out a unit', () => ({ tokens: 10 })],
    ])('a settle that %s keeps the estimate counted, logged, never an admission', async (_what, settle) => {
      resetWarnings();
      const limiter = budget();
      const warned: string[] = [];
      const logger: Logger = { warn: (m: string) => void warned.push(m) };
      const app = await start({ global: options({ limiter, settle, logger }) });
      const res = await readStream(app.url, { 'x-events': '3' });
      expect(res).toEqual({ status: 200, events: 3 });
      await settled();
      expect(warned.some((m) => m.includes('settle-failed'))).toBe(true);
      expect(await counted(limiter.prefix)).toEqual({ requests: 1, tokens: ESTIMATE });
    });

    test("the allow list's IP rules apply to a reserved request as to a checked one: never counted, settle asked nothing", async () => {
      const limiter = budget(true, ['127.0.0.0/8', '::1/128']);
      let settles = 0;
      const app = await start({
        global: options({
          limiter,
          settle: () => {
            settles++;
            return { requests: 1, tokens: 1 };
          },
        }),
      });
      for (let i = 0; i < REQUESTS + 2; i++) expect((await request(app.url).get('/')).status).toBe(200);
      await settled();
      expect(await counted(limiter.prefix)).toEqual({ requests: 0, tokens: 0 });
      expect(settles).toBe(0);
    });

    test('settle needs a refundable limiter and conflicts with skipSuccessfulRequests / skipFailedRequests', async () => {
      const plain = budget(false);
      await expect(factory.makeApp({ global: options({ limiter: plain, settle: () => 1 }) })).rejects.toMatchObject({ option: 'settle' });
      const refundable = budget();
      for (const skip of ['skipSuccessfulRequests', 'skipFailedRequests']) {
        await expect(factory.makeApp({ global: options({ limiter: refundable, settle: () => 1, [skip]: true }) })).rejects.toMatchObject({
          option: 'settle',
        });
      }
      await expect(factory.makeApp({ global: options({ limiter: refundable, settle: 'all' }) })).rejects.toMatchObject({
        option: 'settle',
      });
    });

    test('a cost per unit without settle: counted per unit, headers written; a bad per-request cost is an error, never admitted', async () => {
      const limiter = budget();
      const app = await start({
        global: options({ limiter, cost: (req: Req) => ({ requests: 1, tokens: Number(req.headers['x-tokens'] ?? 100) }) }),
      });
      const ok = await request(app.url).get('/').set('x-tokens', '700');
      expect(ok.status).toBe(200);
      expect(ok.headers['ratelimit-policy']).toEqual(expect.any(String));
      expect(ok.headers['ratelimit']).toEqual(expect.any(String));
      expect(await counted(limiter.prefix)).toEqual({ requests: 1, tokens: 700 });
      for (const bad of ['-1', '1.5', 'x']) {
        const res = await request(app.url).get('/').set('x-tokens', bad);
        expect(res.status).toBe(500);
      }
      expect(app.hits()).toBe(1);
      expect(await counted(limiter.prefix)).toEqual({ requests: 1, tokens: 700 });
      await expect(factory.makeApp({ global: options({ limiter, cost: { requests: 1 } }) })).rejects.toMatchObject({ option: 'cost' });
      await expect(factory.makeApp({ global: options({ limiter, cost: { requests: 1, tokens: 1, bytes: 1 } }) })).rejects.toMatchObject({
        option: 'cost.bytes',
      });
      await expect(factory.makeApp({ global: options({ limiter, cost: { requests: 1, tokens: 5_000 } }) })).rejects.toMatchObject({
        option: 'cost.tokens',
      });
    });

    given(streaming, test)(
      `the bound: 100 concurrent streamed requests estimating ${ESTIMATE} tokens, settling in [50, 400] while 100 more race them, against ${REQUESTS} requests and ${TOKENS} tokens`,
      async () => {
        const limiter = budget();
        const random = seeded(7);
        const actual = new Map<string, number>();
        const settledAt = new Map<string, number>();
        // The first wave's settles wait for the gate: its admissions are all made before any settle.
        let open!: () => void;
        const gate = new Promise<void>((resolve) => (open = resolve));
        const app = await start({
          global: options({
            limiter,
            settle: async (req: Req) => {
              const id = String(req.headers['x-id']);
              if (id.startsWith('1-')) await gate;
              const tokens = actual.get(id)!;
              settledAt.set(id, tokens);
              return { requests: 1, tokens };
            },
          }),
        });
        const wave = async (w: number): Promise<string[]> => {
          const ids = Array.from({ length: 100 }, (_, i) => `${w}-${i}`);
          for (const id of ids) actual.set(id, random(50, 400));
          const done = await Promise.all(ids.map((id) => readStream(app.url, { 'x-id': id, 'x-events': '5', 'x-every-ms': '10' })));
          expect(done.every((d) => d.status === 200 || d.status === 429)).toBe(true);
          return ids.filter((_, i) => done[i]!.status === 200);
        };
        const first = await wave(1);
        // Admitted estimates, with nothing settled yet: as many as fit, never past the limit.
        expect(first.length * ESTIMATE).toBeLessThanOrEqual(TOKENS);
        expect(first).toHaveLength(Math.floor(TOKENS / ESTIMATE));
        expect(await counted(limiter.prefix)).toEqual({ requests: first.length, tokens: first.length * ESTIMATE });
        // The first wave settles while a second wave of 100 races the settles.
        open();
        const second = await wave(2);
        const admitted = [...first, ...second];
        await settled();
        expect(settledAt.size).toBe(admitted.length);
        const excess = admitted.reduce((sum, id) => sum + Math.max(actual.get(id)! - ESTIMATE, 0), 0);
        const sum = admitted.reduce((s, id) => s + actual.get(id)!, 0);
        // What is counted is exactly what the admitted requests settled at: within the limit plus their excess.
        const total = await counted(limiter.prefix);
        expect(total.tokens).toBe(sum);
        expect(total.requests).toBe(admitted.length);
        expect(total.requests).toBeLessThanOrEqual(REQUESTS);
        expect(total.tokens).toBeLessThanOrEqual(TOKENS + excess);
        if (process.env.FLOODGATE_BUDGET_FIGURES === '1') {
          process.stdout.write(
            `${factory.name} budget bound: 200 requests, ${admitted.length} admitted (${first.length} before any settle, ` +
              `${first.length * ESTIMATE} tokens of estimates), ${total.tokens} tokens counted at the end ` +
              `(limit ${TOKENS}, settled excess of admitted ${excess}), ${total.requests} requests counted (limit ${REQUESTS})\n`,
          );
        }
      },
      20_000,
    );

    /** Requests then tokens, on a clock the test moves (held still unless it does). */
    let now = NOW;
    const limiterOf = (algorithm: 'fixed-window' | 'sliding-window', tokens: number, window: string): Limiter => {
      const limiter = createLimiter({
        redis: store,
        prefix: uniquePrefix(`${factory.name}-debt`),
        algorithm,
        limits: [
          { limit: 1_000_000, window },
          { limit: tokens, window, unit: 'tokens' },
        ],
        refunds: true,
        clock: () => now,
        timeoutMs: 10_000,
      });
      limiters.push(limiter);
      return limiter;
    };
    /** One request, then (when admitted) its settle: a sequential client. */
    const sequential = async (url: string, settles: () => number, headers: Record<string, string> = {}): Promise<boolean> => {
      const before = settles();
      const res = await request(url).get('/').set(headers);
      await settled();
      if (res.status !== 200) {
        expect(res.status).toBe(429);
        expect(settles()).toBe(before);
        return false;
      }
      expect(settles()).toBe(before + 1);
      return true;
    };

    test('a client whose estimate is 0 tokens (its max_tokens: 0) is denied once the tokens it used reach the limit', async () => {
      now = NOW;
      const limiter = limiterOf('fixed-window', TOKENS, '1m');
      let settles = 0;
      const app = await start({
        global: {
          limiter,
          identify: () => 'key:zero',
          // The estimate is what the client says it will use.
          cost: (req: Req) => ({ requests: 1, tokens: Number(req.headers['x-max-tokens']) }),
          settle: () => {
            settles++;
            return { requests: 1, tokens: 400 };
          },
        } as unknown as NeutralOptions,
      });
      let admitted = 0;
      for (let i = 0; i < 30; i++) if (await sequential(app.url, () => settles, { 'x-max-tokens': '0' })) admitted++;
      // 400 a request against 2,000: five fill it, and a unit at its limit denies even an estimate of 0.
      expect(admitted).toBe(TOKENS / 400);
      expect(settles).toBe(admitted);
    });

    test("a debt of many windows is paid off at the limit's rate: a client estimating 1 token and using 5,000 against 1,000 per 2 s", async () => {
      now = NOW;
      const limiter = limiterOf('sliding-window', 1_000, '2s');
      let settles = 0;
      const app = await start({
        global: {
          limiter,
          identify: () => 'key:debtor',
          cost: () => ({ requests: 1, tokens: 1 }),
          settle: () => {
            settles++;
            return { requests: 1, tokens: 5_000 };
          },
        } as unknown as NeutralOptions,
      });
      // 12 s of the limiter's clock, a request every 100 ms: 6 windows, 6,000 tokens at the limit's rate.
      let admitted = 0;
      for (let step = 0; step < 120; step++, now += 100) if (await sequential(app.url, () => settles)) admitted++;
      // What is owed is paid off at 1,000 per 2 s: the second is admitted at 8.3 s, once the 4,000 past the
      // limit leave room for its estimate, and its 5,000 then owe until past 12 s: 2 in all, where a debt
      // forgotten with its window gave one a window (6, 30,000 tokens).
      expect(admitted).toBe(2);
    }, 30_000);
  });

  restDescribe(`${factory.name} conformance: budgets, a settle that answers nothing`, () => {
    let store: RedisClient;
    beforeAll(async () => {
      store = await storeClient();
    });
    const closing: { close(): Promise<void> }[] = [];
    afterEach(async () => {
      await Promise.all(closing.splice(0).map((c) => c.close()));
    });
    afterAll(closeClients);
    const EACH = 100;

    // The app's settle reads what its handler records at the first token; a client gone before that token
    // leaves nothing there. Nothing is not a cost of 1: the estimate stays counted, and each is counted.
    const usage = new Map<string, { requests: number; tokens: number }>();
    test.each([
      ['undefined (a map entry never set)', (req: Req) => usage.get(String(req.headers['x-id']))],
      ['null', () => null],
      ['a promise of undefined', async () => undefined],
    ])('a settle that answers %s keeps the estimate of each of 10 requests, each a settle-failed event', async (_what, settle) => {
      resetWarnings();
      const warned: string[] = [];
      const failures: SettleFailedEvent[] = [];
      const limiter = createLimiter({
        redis: store,
        prefix: uniquePrefix(`${factory.name}-nothing`),
        algorithm: 'fixed-window',
        limits: [
          { limit: REQUESTS, window: '1m' },
          { limit: TOKENS, window: '1m', unit: 'tokens' },
        ],
        refunds: true,
        clock: () => NOW,
        // A loaded machine may take longer than the default deadline: a check the failure policy answered
        // would have nothing to settle, and no event.
        timeoutMs: 10_000,
        onEvent: (e) => void (e.type === 'settle-failed' && failures.push(e)),
      });
      closing.push(limiter);
      const logger: Logger = { warn: (m: string) => void warned.push(m) };
      const global = { limiter, logger, settle, identify: () => 'key:budget', cost: { requests: 1, tokens: EACH } };
      const app = await factory.makeApp({ global: global as unknown as NeutralOptions });
      closing.push(app);
      for (let i = 0; i < 10; i++) expect((await request(app.url).get('/').set('x-id', `r${i}`)).status).toBe(200);
      await settled();
      expect(failures).toHaveLength(10);
      expect(failures.map((e) => e.reason)).toEqual(Array(10).fill('invalid'));
      const { states } = await limiter.peek('key:budget', { cost: { requests: 0, tokens: 0 } });
      expect(states.map((st) => [st.unit ?? 'requests', st.remaining])).toEqual([
        ['requests', REQUESTS - 10],
        ['tokens', TOKENS - 10 * EACH],
      ]);
      // Logged, not once per process but at most once a minute (kernel/warnings.test.ts): here, at least once.
      const lines = warned.filter((m) => m.includes('[settle-failed]'));
      expect(lines.length).toBeGreaterThanOrEqual(1);
      for (const line of lines) expect(line).toMatch(/got (undefined|null)\b/);
    });
  });
}
