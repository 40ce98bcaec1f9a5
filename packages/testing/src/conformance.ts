import type { IncomingHttpHeaders } from 'node:http';
import request from 'supertest';
import {
  resetWarnings,
  type ConcurrencyHttpOptions,
  type HttpOptions,
  type LimitsOrLimiter,
  type Logger,
  type SlowDownHttpOptions,
} from '@floodgate/core/adapter';
import type { RedisClient } from '@floodgate/core';
import { closeClients, closeStoreClient, connect, storeClient, uniquePrefix } from './clients';
import { startRedis } from './redis-server';
import { concurrencyConformance } from './concurrency-conformance';
import { contract, test } from './suite-part';
import { deadlineFactory } from './deadline';

/** Options as every adapter takes them; functions see only what all three frameworks' requests share. */
export type NeutralOptions = LimitsOrLimiter<HttpOptions<{ headers: IncomingHttpHeaders }>>;
export type NeutralConcurrencyOptions = ConcurrencyHttpOptions<{ headers: IncomingHttpHeaders }>;
export type NeutralSlowDownOptions = LimitsOrLimiter<SlowDownHttpOptions<{ headers: IncomingHttpHeaders }>>;
export type RoutePath = '/' | '/search' | '/login';

/**
 * The app each adapter builds for the suite: an auth stand-in that sets the user to `{ id: <x-user header> }`
 * (Express `req.user`, Fastify `request.user`, Koa `ctx.state.user`), a JSON body parser, the `global`
 * limiter on every route, `GET /`, `GET /search` and `POST /login`, each with its own limiter from `routes`.
 * Handlers count themselves in hits() and answer `{ ok: status < 400 }` with the status the `x-status` header
 * asks for (default 200), at once or, with `x-hold`, once AppSpec.slow resolves: see answerOf() and
 * beforeAnswer().
 */
export interface AppSpec {
  global?: NeutralOptions;
  routes?: Partial<Record<RoutePath, NeutralOptions>>;
  /** Trust the loopback proxy, so X-Forwarded-For decides the client IP. Default: trust nothing. */
  trustProxy?: boolean;
  /** Listen on this unix socket instead of a loopback port (requests then have no client IP). */
  socketPath?: string;
  /** The adapter's `concurrency(...)` on every route, before `global`. */
  concurrency?: NeutralConcurrencyOptions;
  /** The adapter's `slowDown(...)` on every route, after `concurrency` and before `global`. */
  slowDown?: NeutralSlowDownOptions;
  /** Run `global` before `slowDown` (Fastify: an app-level `onRequest` hook, `app.rateLimit()`). Default: after. */
  rateLimitFirst?: boolean;
  /** `GET /slow` counts itself, then answers 200 `{ ok: true }` once this resolves (default: at once). */
  slow?: () => Promise<void>;
  /**
   * `GET /stream` counts itself, then answers 200 `text/event-stream` with the events of sseEvents() (the
   * `global` limiter applies), calling this as each event is produced: `n` events so far for this request.
   */
  stream?: (headers: IncomingHttpHeaders, n: number) => void;
}

/** What a suite app's handler answers a request: the status of `x-status` (200). */
export function answerOf(headers: IncomingHttpHeaders): { status: number } {
  const status = Number(headers['x-status'] ?? 200);
  return { status: Number.isInteger(status) && status >= 200 && status <= 599 ? status : 200 };
}

/**
 * What a suite app's handler waits for before it answers: with `x-hold`, until AppSpec.slow resolves (a gate
 * the test opens, so it holds a request of any status while it acts); else nothing. A test knows where a
 * request is by holding it, never by a delay.
 */
export function beforeAnswer(headers: IncomingHttpHeaders, spec: AppSpec): Promise<void> {
  return headers['x-hold'] !== undefined && spec.slow !== undefined ? spec.slow() : Promise.resolve();
}

export interface TestApp {
  /** Base URL of the listening server. */
  url: string;
  /** The unix socket it listens on, when AppSpec.socketPath was given. */
  socketPath?: string;
  hits(): number;
  close(): Promise<void>;
}

/**
 * What an adapter offers of the suites' app. A test of something the adapter does not offer is not defined
 * for it (never skipped): a tRPC procedure has no `concurrency()` or `slowDown()` of its own. Each is true
 * unless the factory says otherwise.
 */
export interface Capabilities {
  /** The adapter's `concurrency(...)` (AppSpec.concurrency). */
  concurrency: boolean;
  /** The adapter's `slowDown(...)` (AppSpec.slowDown, AppSpec.rateLimitFirst). */
  slowDown: boolean;
  /** `GET /stream` (AppSpec.stream): a `text/event-stream` answer, refused with the limiter's status, settled when its body ends. */
  stream: boolean;
  /** Listening on a unix socket (AppSpec.socketPath). */
  unixSocket: boolean;
  /**
   * The framework itself serves requests while Object.prototype carries keys Floodgate's options have
   * (`mode`, `skip`...): tRPC's Node adapter builds a Fetch Request, whose constructor reads `mode` off the
   * prototype and throws, so every request is a 500 before any middleware runs.
   */
  servesPollutedPrototype: boolean;
  /**
   * A response checked by the global limiter and a route's own lists both in its RateLimit headers. Next
   * keeps the proxy's response headers over a route handler's of the same name (its send-response appends
   * one only when absent), so there the proxy's are the response's.
   */
  routeHeadersBesideGlobal: boolean;
  /** A refusal may have any status of 400 and up (`statusCode`, `denyStatusCode`); tRPC: only those it has an error code for. */
  anyRefusalStatus: boolean;
}

/** The body Floodgate makes for a refusal: `{ statusCode, error, message }`, or what `message` made it. */
export type DenialBody = Record<string, unknown>;

export interface AdapterFactory {
  name: string;
  /** Builds and starts the app; rejects with the adapter's ConfigError on bad options. */
  makeApp(spec: AppSpec): Promise<TestApp>;
  /** What it offers (default: everything). */
  capabilities?: Partial<Capabilities>;
  /**
   * How the framework frames a refusal whose body Floodgate made as `body` with HTTP status `status`: what
   * a client receives, to compare with toEqual (jest's asymmetric matchers allowed). Default: `body` as it
   * is, the JSON body of every REST adapter. tRPC puts a refusal in its own error shape (docs/trpc.md).
   */
  denialBody?(body: DenialBody, status: number): unknown;
}

/** The factory's capabilities, each true unless it says otherwise. */
export function capabilitiesOf(factory: AdapterFactory): Capabilities {
  return {
    concurrency: true,
    slowDown: true,
    stream: true,
    unixSocket: true,
    servesPollutedPrototype: true,
    routeHeadersBesideGlobal: true,
    anyRefusalStatus: true,
    ...factory.capabilities,
  };
}

/** The body a client of `factory`'s framework receives for a refusal Floodgate made as `body` (AdapterFactory.denialBody). */
export function denialBodyOf(factory: AdapterFactory, body: DenialBody, status: number): unknown {
  return factory.denialBody === undefined ? body : factory.denialBody(body, status);
}

const header = (res: request.Response, name: string): string | undefined => res.headers[name.toLowerCase()] as string | undefined;

/** The behaviours of docs/design.md section 10, "HTTP behaviour", identical for every adapter (run with describe per adapter). */
export function conformance(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  describe(`${factory.name} conformance`, () => {
    // The test's own commands use ioredis; the apps' limiters the client under test (FLOODGATE_CLIENT, jest.config.ts).
    const redis = connect();
    let store: RedisClient;
    beforeAll(async () => {
      store = await storeClient();
    });
    const apps: TestApp[] = [];
    const base = (extra: Partial<NeutralOptions> = {}): NeutralOptions =>
      ({ redis: store, prefix: uniquePrefix(factory.name), limits: { limit: 5, window: '1m' }, ...extra }) as NeutralOptions;
    const start = async (spec: AppSpec): Promise<TestApp> => {
      const app = await factory.makeApp(spec);
      apps.push(app);
      return app;
    };
    const burst = async (url: string, n: number, path = '/', set: Record<string, string> = {}): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await request(url).get(path).set(set)).status);
      return out;
    };

    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
    });
    afterAll(closeClients);

    contract('denies with 429, an integer Retry-After and the default body, without reaching the handler', async () => {
      const app = await start({ global: base({ limits: { limit: 3, window: '1m' } }) });
      expect(await burst(app.url, 3)).toEqual([200, 200, 200]);
      const denied = await request(app.url).get('/');
      expect(denied.status).toBe(429);
      expect(header(denied, 'Retry-After')).toMatch(/^\d+$/);
      const retry = Number(header(denied, 'Retry-After'));
      expect(retry).toBeGreaterThanOrEqual(1);
      // The default sliding window frees its oldest bucket whole: up to one bucket (window / 10) past it.
      expect(retry).toBeLessThanOrEqual(66);
      expect(denied.body).toEqual(
        denialBodyOf(
          factory,
          { statusCode: 429, error: 'Too Many Requests', message: expect.stringContaining('Rate limit exceeded') },
          429,
        ),
      );
      expect(app.hits()).toBe(3);
    });

    contract.each([
      // 20 requests in one bucket of the ring (1 s of the 10 s window), 400 ms into it: the denial's retry
      // and the reset are both when that bucket leaves, 11 buckets after it began (10.6 s): 11 and 11.
      ['in one bucket', 0, '11', 11],
      // 10, then 10 more a second later: 10 requests leave with the older bucket, in 9.6 s, so Retry-After
      // says 10; the window is empty only when the newer one leaves (10.6 s): t=11.
      ['across two buckets', 1_000, '10', 11],
    ] as const)(
      'one decision, one answer: a 10 s sliding window on a fixed clock, requests until denied %s',
      async (_name, stepMs, retryAfter, t) => {
        // A whole second plus 400 ms: the buckets of a 10 s window (precision 10) are the clock's seconds.
        let now = 1_700_000_000_400;
        const app = await start({ global: base({ limits: { limit: 20, window: '10s' }, clock: () => now }) });
        expect(await burst(app.url, 10)).toEqual(Array(10).fill(200));
        now += stepMs;
        expect(await burst(app.url, 10)).toEqual(Array(10).fill(200));
        const denied = await request(app.url).get('/');
        expect(denied.status).toBe(429);
        expect({
          retryAfter: header(denied, 'Retry-After'),
          rateLimit: header(denied, 'RateLimit'),
          policy: header(denied, 'RateLimit-Policy'),
          body: denied.body as unknown,
        }).toEqual({
          retryAfter,
          rateLimit: `"10s";r=0;t=${t}`,
          policy: '"10s";q=20;w=10',
          body: denialBodyOf(
            factory,
            { statusCode: 429, error: 'Too Many Requests', message: `Rate limit exceeded, retry in ${retryAfter} seconds` },
            429,
          ),
        });
        expect(app.hits()).toBe(20);
      },
    );

    contract('draft-8 headers list every rule and report the binding one', async () => {
      const app = await start({
        global: base({
          limits: [
            { limit: 10, window: '1s' },
            { limit: 120, window: '1m' },
          ],
        }),
      });
      const res = await request(app.url).get('/');
      expect(res.status).toBe(200);
      expect(header(res, 'RateLimit-Policy')).toBe('"1s";q=10;w=1, "1m";q=120;w=60');
      expect(header(res, 'RateLimit')).toMatch(/^"1s";r=9;t=[012]$/);
      expect(header(res, 'Retry-After')).toBeUndefined();
    });

    contract.each([
      ['draft-7', { 'ratelimit-policy': '5;w=60', ratelimit: /^limit=5, remaining=4, reset=\d+$/ }],
      ['draft-6', { 'ratelimit-policy': '5;w=60', 'ratelimit-limit': '5', 'ratelimit-remaining': '4', 'ratelimit-reset': /^\d+$/ }],
      ['legacy', { 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '4', 'x-ratelimit-reset': /^\d{10}$/ }],
      [false, {}],
    ] as const)('headers: %s sends exactly its own headers', async (mode, expected) => {
      const app = await start({ global: base({ headers: mode }) });
      const res = await request(app.url).get('/');
      const seen = Object.keys(res.headers)
        .filter((h) => /ratelimit|retry-after/.test(h))
        .sort();
      expect(seen).toEqual(Object.keys(expected).sort());
      for (const [name, value] of Object.entries(expected)) expect(res.headers[name]).toMatch(value);
      if (mode === 'legacy') {
        const reset = Number(res.headers['x-ratelimit-reset']);
        expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
        expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 67);
      }
    });

    test('omitHeaders leaves out the headers it names: Retry-After on a denial, RateLimit-Policy', async () => {
      const app = await start({ global: base({ limits: { limit: 1, window: '1m' }, omitHeaders: ['retry-after', 'RateLimit-Policy'] }) });
      const allowed = await request(app.url).get('/');
      expect(header(allowed, 'RateLimit')).toMatch(/^"1m";r=0;t=\d+$/);
      expect(header(allowed, 'RateLimit-Policy')).toBeUndefined();
      const denied = await request(app.url).get('/');
      expect(denied.status).toBe(429);
      expect(header(denied, 'Retry-After')).toBeUndefined();
      expect(header(denied, 'RateLimit')).toMatch(/^"1m";r=0;t=\d+$/);
      await expect(factory.makeApp({ global: base({ omitHeaders: ['X-Powered-By' as 'RateLimit'] }) })).rejects.toMatchObject({
        option: 'omitHeaders',
      });
    });

    test("rules of two units: a draft-8 item per unit and, with 'openai', x-ratelimit-*-requests and -tokens", async () => {
      // The adapters' `cost` is one number, charged to every unit: 2 requests and 2 tokens a request.
      const twoUnits = [
        { limit: 10, window: '1m' },
        { limit: 6, window: '1m', unit: 'tokens' },
      ];
      const app = await start({
        global: base({ limits: twoUnits, cost: 2, headers: ['draft-8', 'openai'], omitHeaders: ['x-ratelimit-reset-requests'] }),
      });
      const first = await request(app.url).get('/');
      expect(first.status).toBe(200);
      expect(header(first, 'RateLimit-Policy')).toBe('"1m-requests";q=10;w=60, "1m-tokens";q=6;w=60');
      expect(header(first, 'RateLimit')).toMatch(/^"1m-requests";r=8;t=\d+, "1m-tokens";r=4;t=\d+$/);
      const goDuration = /^(\d+ms|(\d+h)?(\d+m)?\d+(\.\d+)?s)$/;
      expect(header(first, 'x-ratelimit-limit-requests')).toBe('10');
      expect(header(first, 'x-ratelimit-remaining-requests')).toBe('8');
      expect(header(first, 'x-ratelimit-reset-requests')).toBeUndefined();
      expect(header(first, 'x-ratelimit-limit-tokens')).toBe('6');
      expect(header(first, 'x-ratelimit-remaining-tokens')).toBe('4');
      expect(header(first, 'x-ratelimit-reset-tokens')).toMatch(goDuration);
      expect(await burst(app.url, 3)).toEqual([200, 200, 429]);
      // The tokens rule denies (6 tokens spent); the requests rule still has 4 left.
      const denied = await request(app.url).get('/');
      expect(denied.status).toBe(429);
      expect(header(denied, 'Retry-After')).toMatch(/^\d+$/);
      expect(header(denied, 'x-ratelimit-remaining-tokens')).toBe('0');
      expect(header(denied, 'x-ratelimit-remaining-requests')).toBe('4');
      expect(header(denied, 'x-ratelimit-reset-tokens')).toMatch(goDuration);
      expect(header(denied, 'RateLimit')).toMatch(/^"1m-requests";r=4;t=\d+, "1m-tokens";r=0;t=\d+$/);
      expect(app.hits()).toBe(3);
    });

    contract('a route limit adds to the global one, and each is counted on its own', async () => {
      const app = await start({
        global: base({ limits: { limit: 5, window: '1m' } }),
        routes: { '/search': base({ name: 'search', limits: { limit: 2, window: '1m' } }) },
      });
      const first = await request(app.url).get('/search');
      if (capabilitiesOf(factory).routeHeadersBesideGlobal) {
        expect(header(first, 'RateLimit-Policy')).toBe('"1m";q=5;w=60, "search-1m";q=2;w=60');
        expect(header(first, 'RateLimit')).toMatch(/^"1m";r=4;t=\d+, "search-1m";r=1;t=\d+$/);
      } else {
        // The global limiter's headers are the response's (Next: the proxy's win over a route handler's).
        expect(header(first, 'RateLimit-Policy')).toBe('"1m";q=5;w=60');
        expect(header(first, 'RateLimit')).toMatch(/^"1m";r=4;t=\d+$/);
      }
      expect(await burst(app.url, 2, '/search')).toEqual([200, 429]);
      // The search limit is spent; the global one (3 of 5 used) still admits other routes, then denies.
      expect(await burst(app.url, 3)).toEqual([200, 200, 429]);
      expect(app.hits()).toBe(4);
    });

    contract('custom identifiers: identify() replaces or extends the defaults', async () => {
      const byKey = await start({
        global: base({ limits: { limit: 2, window: '1m' }, identify: (req) => `key:${String(req.headers['x-api-key'])}` }),
      });
      expect(await burst(byKey.url, 3, '/', { 'x-api-key': 'a' })).toEqual([200, 200, 429]);
      expect(await burst(byKey.url, 2, '/', { 'x-api-key': 'b' })).toEqual([200, 200]);
      const extended = await start({
        global: base({
          limits: [
            { limit: 3, window: '1m', for: 'ip' },
            { limit: 2, window: '1m', for: 'tenant' },
          ],
          identify: (req, ids) => [...ids, `tenant:${String(req.headers['x-tenant'])}`],
        }),
      });
      expect(await burst(extended.url, 3, '/', { 'x-tenant': 't1' })).toEqual([200, 200, 429]);
      // The default ip: identifier is still counted: one IP, 3 admitted in all.
      expect(await burst(extended.url, 2, '/', { 'x-tenant': 't2' })).toEqual([200, 429]);
    });

    contract('IP and user are both counted: users behind one IP share it; one user across IPs is bound by the user rule', async () => {
      const limits = [
        { limit: 3, window: '1m', for: 'ip' },
        { limit: 2, window: '1m', for: 'user' },
      ];
      const app = await start({ global: base({ limits }), trustProxy: true });
      const from = (ip: string, user: string) => ({ 'x-forwarded-for': ip, 'x-user': user });
      expect(await burst(app.url, 2, '/', from('10.0.0.1', 'alice'))).toEqual([200, 200]);
      expect(await burst(app.url, 2, '/', from('10.0.0.1', 'bob'))).toEqual([200, 429]);
      const carol = [];
      for (const ip of ['10.0.1.1', '10.0.1.2', '10.0.1.3']) carol.push((await request(app.url).get('/').set(from(ip, 'carol'))).status);
      expect(carol).toEqual([200, 200, 429]);
      expect(await burst(app.url, 1, '/', { 'x-forwarded-for': '10.0.1.3' })).toEqual([200]);
    });

    test('IPv6 addresses in one /56 share a budget; IPv4-mapped IPv6 is the IPv4 address', async () => {
      const app = await start({ global: base({ limits: { limit: 2, window: '1m' } }), trustProxy: true });
      const xff = async (ip: string): Promise<number> => (await request(app.url).get('/').set('X-Forwarded-For', ip)).status;
      expect([await xff('2001:db8:1200:ab::1'), await xff('2001:db8:1200:cd::2'), await xff('2001:db8:12ff::9')]).toEqual([200, 200, 200]);
      expect(await xff('2001:db8:1200:ff:1:2:3:4')).toBe(429);
      expect([await xff('10.1.2.3'), await xff('::ffff:10.1.2.3'), await xff('::ffff:10.1.2.3')]).toEqual([200, 200, 429]);
    });

    contract('a spoofed X-Forwarded-For is ignored while proxies are not trusted, with one named warning', async () => {
      resetWarnings();
      const warnings: string[] = [];
      const logger: Logger = { warn: (m) => warnings.push(m) };
      const app = await start({ global: base({ limits: { limit: 2, window: '1m' }, logger }) });
      const statuses = [];
      for (const ip of ['1.1.1.1', '2.2.2.2', '3.3.3.3'])
        statuses.push((await request(app.url).get('/').set('X-Forwarded-For', ip)).status);
      expect(statuses).toEqual([200, 200, 429]);
      expect(warnings.filter((w) => w.includes('[forwarded-header-untrusted]'))).toHaveLength(1);
    });

    test('300 concurrent requests against a limit of 30: exactly 30 pass', async () => {
      const app = await start({ global: base({ limits: { limit: 30, window: '1m' } }) });
      const statuses = await Promise.all(Array.from({ length: 300 }, async () => (await request(app.url).get('/')).status));
      expect(statuses.filter((s) => s === 200)).toHaveLength(30);
      expect(statuses.filter((s) => s === 429)).toHaveLength(270);
      expect(app.hits()).toBe(30);
    });

    test('Redis down: failure closed answers 503 with Retry-After and no driver text, open lets through, both within the deadline', async () => {
      const server = await startRedis();
      const down = await storeClient(server.url);
      const closed = await start({ global: base({ redis: down, failure: 'closed', timeoutMs: 100, logger: { warn: () => undefined } }) });
      const open = await start({ global: base({ redis: down, failure: 'open', timeoutMs: 100, logger: { warn: () => undefined } }) });
      expect((await request(closed.url).get('/')).status).toBe(200);
      await server.stop();
      const t0 = Date.now();
      const denied = await request(closed.url).get('/');
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(denied.status).toBe(503);
      expect(Number(header(denied, 'Retry-After'))).toBeGreaterThanOrEqual(1);
      expect(header(denied, 'RateLimit')).toBeUndefined();
      expect(JSON.stringify(denied.body)).not.toMatch(/ECONN|redis|connection|closed/i);
      const passed = await request(open.url).get('/');
      expect(passed.status).toBe(200);
      expect(header(passed, 'RateLimit-Policy')).toBeUndefined();
      expect(closed.hits() + open.hits()).toBe(2);
      // quit() would wait for a server that is gone.
      await closeStoreClient(down);
    });

    test('shadow mode and skip() never deny and send no rate-limit headers', async () => {
      const shadow = await start({ global: base({ limits: { limit: 1, window: '1m' }, mode: 'shadow' }) });
      const skipped = await start({ global: base({ limits: { limit: 1, window: '1m' }, skip: (req) => req.headers['x-skip'] === '1' }) });
      for (const app of [shadow, skipped]) {
        for (let i = 0; i < 3; i++) {
          const res = await request(app.url).get('/').set('x-skip', '1');
          expect(res.status).toBe(200);
          expect(Object.keys(res.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
        }
      }
      expect(await burst(skipped.url, 2)).toEqual([200, 429]);
    });

    contract('statusCode, message (string, object, function) and cost are honoured', async () => {
      const text = await start({ global: base({ limits: { limit: 4, window: '1m' }, statusCode: 503, message: 'slow down', cost: 2 }) });
      expect(await burst(text.url, 3)).toEqual([200, 200, 503]);
      expect((await request(text.url).get('/')).body).toEqual(
        denialBodyOf(factory, { statusCode: 503, error: 'Service Unavailable', message: 'slow down' }, 503),
      );
      const object = await start({ global: base({ limits: { limit: 1, window: '1m' }, message: { code: 'E_RATE' } }) });
      await burst(object.url, 1);
      expect((await request(object.url).get('/')).body).toEqual(denialBodyOf(factory, { code: 'E_RATE' }, 429));
      const fn = await start({
        global: base({ limits: { limit: 1, window: '1m' }, message: (_req, d) => `wait ${d.retryAfterMs > 0}`, cost: () => 1 }),
      });
      await burst(fn.url, 1);
      expect((await request(fn.url).get('/')).body).toEqual(
        denialBodyOf(factory, { statusCode: 429, error: 'Too Many Requests', message: 'wait true' }, 429),
      );
    });

    test('bad options fail at construction with a ConfigError naming the option', async () => {
      await expect(factory.makeApp({ global: { ...base(), windowMs: 60_000 } as unknown as NeutralOptions })).rejects.toMatchObject({
        code: 'ERR_FLOODGATE_CONFIG',
        option: 'windowMs',
      });
      await expect(factory.makeApp({ global: base({ headers: 'draft-9' as 'draft-8' }) })).rejects.toMatchObject({ option: 'headers' });
      await expect(factory.makeApp({ global: base({ ipv6Subnet: 128 }) })).rejects.toMatchObject({ option: 'ipv6Subnet' });
      await expect(factory.makeApp({ global: base({ cost: 6 }) })).rejects.toMatchObject({ option: 'cost' });
    });

    if (capabilitiesOf(factory).concurrency) concurrencyConformance({ factory, redis, start });
  });
}
