import express, { type Request, type RequestHandler } from 'express';
import request from 'supertest';
import { createClient } from 'redis';
import { createLimiter, normaliseIp, type Decision, type Limiter } from '@floodgate/core';
import { resetWarnings } from '@floodgate/core/adapter';
import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, serveHttp, startRedis, testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { rateLimit, slowDown, type RateLimitBaseOptions, type RateLimitOptions } from '@floodgate/express';

/*
 * docs/migrating/express-rate-limit.md, checked: express-rate-limit's (and rate-limit-redis's) documented
 * examples as the guide rewrites them, and every row of its tables, against real Express apps (over
 * sockets) and the test Redis, asserting what express-rate-limit documents for each (and what the guide
 * says differs). The Cluster rows (`sendCommandCluster`, `cluster: { colocate }`) are proven by core's
 * Cluster suites (packages/core/test/cluster-equivalence.test.ts, clients.test.ts), not again here.
 */
const redis = connect();
const closed = closeAfterEach();

async function serve(app: express.Express): Promise<string> {
  return closed(await serveHttp(app.listen(0, '127.0.0.1'))).url;
}
const ok = (_req: Request, res: express.Response): void => void res.json({ ok: true });
/** A middleware closed after the test, on the test Redis under a prefix of its own unless the options say otherwise. */
const limiterOf = (options: Partial<RateLimitOptions>) =>
  closed(rateLimit({ redis, prefix: uniquePrefix('erl'), limits: { limit: 1, window: '1m' }, ...options } as RateLimitOptions));
/** An app of `middleware` before GET / (answering `ok`); its URL. */
async function appOf(...middleware: RequestHandler[]): Promise<string> {
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(...middleware);
  app.get('/', ok);
  return serve(app);
}
const statuses = async (url: string, n: number, path = '/', set: Record<string, string> = {}): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(url).get(path).set(set)).status);
  return out;
};

test("the README's recommended limiter: 100 per 15 minutes per IP, draft-8 headers, no legacy headers; request 101 is a 429", async () => {
  // windowMs: 15 * 60 * 1000, limit: 100, standardHeaders: 'draft-8', legacyHeaders: false, ipv6Subnet: 56,
  // store: new RedisStore({ sendCommand: ... })
  const limiter = rateLimit({
    redis,
    prefix: uniquePrefix('erl'),
    limits: { limit: 100, window: '15m' },
    headers: 'draft-8',
    ipv6Subnet: 56,
  });
  closed(limiter);
  const app = express();
  app.use(limiter);
  app.get('/', ok);
  const url = await serve(app);
  const first = await request(url).get('/');
  expect(first.headers['ratelimit-policy']).toBe('"15m";q=100;w=900');
  expect(first.headers['ratelimit']).toMatch(/^"15m";r=99;t=\d+$/);
  expect(Object.keys(first.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
  expect(new Set(await statuses(url, 99))).toEqual(new Set([200]));
  const denied = await request(url).get('/');
  expect(denied.status).toBe(429);
  const retry = Number(denied.headers['retry-after']);
  expect(retry).toBeGreaterThanOrEqual(1);
  // The default sliding window frees its oldest bucket whole: up to one bucket (window / 10) past the window.
  expect(retry).toBeLessThanOrEqual(15 * 60 * 1.1);
  expect(denied.headers['ratelimit']).toMatch(/^"15m";r=0;t=\d+$/);
  expect(denied.body).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds?$/),
  });
});

test("usage: app.use('/auth', limiter) limits one path; app.post('/reset_password', limiter, handler) one endpoint", async () => {
  const prefix = uniquePrefix('erl');
  const auth = rateLimit({ redis, prefix, name: 'auth', limits: { limit: 2, window: '1m' } });
  const reset = rateLimit({ redis, prefix, name: 'reset', limits: { limit: 1, window: '1m' } });
  closed(auth);
  closed(reset);
  const app = express();
  app.use('/auth', auth);
  app.get('/auth/login', ok);
  app.get('/public', ok);
  app.post('/reset_password', reset, ok);
  const url = await serve(app);
  expect(await statuses(url, 3, '/auth/login')).toEqual([200, 200, 429]);
  expect(await statuses(url, 3, '/public')).toEqual([200, 200, 200]);
  expect([(await request(url).post('/reset_password')).status, (await request(url).post('/reset_password')).status]).toEqual([200, 429]);
});

test('keyGenerator -> identify, skip (an allowlist) -> skip, message object -> message, statusCode -> statusCode', async () => {
  const allowlist = ['192.168.0.56', '192.168.0.21'];
  const limiter = rateLimit({
    redis,
    prefix: uniquePrefix('erl'),
    limits: { limit: 1, window: '1m' },
    // keyGenerator: (req) => req.get('x-api-key') ?? ipKeyGenerator(req.ip)
    identify: (req, defaults) => (req.get('x-api-key') ? `key:${req.get('x-api-key')}` : defaults),
    skip: (req) => allowlist.includes(req.get('x-client') ?? ''),
    message: { error: 'Too many requests, please try again later.' },
    statusCode: 503,
  });
  closed(limiter);
  const app = express();
  app.use(limiter);
  app.get('/', ok);
  const url = await serve(app);
  expect(await statuses(url, 2, '/', { 'x-api-key': 'a' })).toEqual([200, 503]);
  expect(await statuses(url, 2, '/', { 'x-api-key': 'b' })).toEqual([200, 503]);
  const denied = await request(url).get('/').set('x-api-key', 'a');
  expect(denied.body).toEqual({ error: 'Too many requests, please try again later.' });
  // Skipped: never limited, no headers.
  const skipped = await request(url).get('/').set({ 'x-api-key': 'a', 'x-client': '192.168.0.56' });
  expect(skipped.status).toBe(200);
  expect(skipped.headers['ratelimit']).toBeUndefined();
});

test('limit as a function of the user (premium 10, others 5) -> one rule and a cost per request', async () => {
  const isPremium = (req: Request): boolean => req.get('x-plan') === 'premium';
  // limit: async (req) => (await isPremium(req.user)) ? 10 : 5
  const limiter = rateLimit({
    redis,
    prefix: uniquePrefix('erl'),
    limits: { limit: 10, window: '1h' },
    cost: (req) => (isPremium(req) ? 1 : 2),
  });
  closed(limiter);
  const app = express();
  app.use(limiter);
  app.get('/', ok);
  const url = await serve(app);
  const free = await statuses(url, 6, '/', { 'x-user': 'free' });
  expect(free).toEqual([200, 200, 200, 200, 200, 429]);
  await limiter.limiter.reset('ip:127.0.0.1');
  const premium = await statuses(url, 11, '/', { 'x-plan': 'premium' });
  expect(premium.filter((s) => s === 200)).toHaveLength(10);
  expect(premium[10]).toBe(429);
});

test('handler(req, res, next, options) -> handler(req, res, next, decision); resetKey(key) -> limiter.reset; req.rateLimit', async () => {
  const seen: Decision[] = [];
  const limiter = rateLimit({
    redis,
    prefix: uniquePrefix('erl'),
    limits: { limit: 2, window: '1m' },
    handler: (_req, res, _next, decision) => {
      seen.push(decision);
      res.status(429).send(`Too many requests: ${decision.limit} per minute.`);
    },
  });
  closed(limiter);
  const app = express();
  app.post('/reset', async (req, res) => {
    await limiter.limiter.reset(`ip:${req.ip}`);
    res.send('Rate limit is reset!');
  });
  app.use(limiter);
  app.get('/', (req, res) => void res.json({ limit: req.rateLimit?.limit, remaining: req.rateLimit?.remaining }));
  const url = await serve(app);
  expect((await request(url).get('/')).body).toEqual({ limit: 2, remaining: 1 });
  await request(url).get('/');
  const denied = await request(url).get('/');
  expect([denied.status, denied.text]).toEqual([429, 'Too many requests: 2 per minute.']);
  expect(denied.headers['retry-after']).toMatch(/^\d+$/);
  expect(seen[0]).toMatchObject({ allowed: false, reason: 'limit', remaining: 0 });
  expect((await request(url).post('/reset')).text).toBe('Rate limit is reset!');
  expect((await request(url).get('/')).status).toBe(200);
});

test("a custom store (express-rate-limit's Store interface) -> a `limiter` of your own that implements Limiter", async () => {
  const real = createLimiter({ limits: { limit: 2, window: '1m' }, prefix: uniquePrefix('erl') });
  const asked: string[] = [];
  // Anything with check(): here it records the identifiers and delegates to the in-memory store.
  const custom: Limiter = {
    ...real,
    name: real.name,
    prefix: real.prefix,
    algorithm: real.algorithm,
    rules: real.rules,
    failure: real.failure,
    mode: real.mode,
    check: (ids, options) => {
      asked.push(String(ids));
      return real.check(ids, options);
    },
    peek: (ids, options) => real.peek(ids, options),
    reset: (ids) => real.reset(ids),
    block: (id, options) => real.block(id, options),
    unblock: (id) => real.unblock(id),
    acquire: (ids, options) => real.acquire(ids, options),
    close: () => real.close(),
  };
  const limiter = rateLimit({ limiter: custom });
  const app = express();
  app.use(limiter);
  app.get('/', ok);
  const url = await serve(app);
  expect(await statuses(url, 3)).toEqual([200, 200, 429]);
  expect(asked).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1', 'ip:127.0.0.1']);
  await real.close();
});

test('passOnStoreError: false (the default) -> failure: closed; true -> failure: open; or failure: local', async () => {
  const server = await startRedis();
  const down = connect(server.url);
  const prefix = uniquePrefix('erl');
  const app = express();
  for (const failure of ['closed', 'open', 'local'] as const) {
    const limiter = limiterOf({ redis: down, prefix, name: failure, failure, timeoutMs: 100, logger: { warn: () => undefined } });
    app.get(`/${failure}`, limiter, ok);
  }
  const url = await serve(app);
  // Connected first, so Redis goes away under a client that had it (no request counted before: a client
  // known to have used its limit is denied with 429 whatever the policy).
  expect(await down.ping()).toBe('PONG');
  await server.stop();
  const refused = await request(url).get('/closed');
  expect([refused.status, Number(refused.headers['retry-after']) >= 1]).toEqual([503, true]);
  // 'open': let through while Redis is away, up to each client's limit in this process (1 a minute here).
  expect(await statuses(url, 2, '/open')).toEqual([200, 429]);
  // 'local': an in-process limiter with the same rules (1 a minute) decides while Redis is away.
  expect(await statuses(url, 2, '/local')).toEqual([200, 429]);
  down.disconnect();
});

test("the guide's worked example: one login limiter per IP and per account, sliding-log, failure local", async () => {
  const login = rateLimit({
    redis,
    prefix: uniquePrefix('erl'),
    name: 'login',
    limits: [
      { limit: 20, window: '15m', for: 'ip' },
      { limit: 5, window: '15m', for: 'account' },
    ],
    algorithm: 'sliding-log',
    failure: 'local',
    identify: (req, defaults) =>
      typeof req.body?.username === 'string' ? [...defaults, `account:${req.body.username.toLowerCase()}`] : defaults,
    message: 'Too many login attempts, please try again later.',
  });
  closed(login);
  const app = express();
  app.set('trust proxy', 'loopback');
  app.post('/login', express.json(), login, ok);
  const url = await serve(app);
  const attempt = async (username: string, ip: string): Promise<number> =>
    (await request(url).post('/login').set('X-Forwarded-For', ip).send({ username })).status;
  // Five attempts on one account from five addresses, then the account is closed from anywhere.
  const ada = [];
  for (let i = 1; i <= 6; i++) ada.push(await attempt(i === 6 ? 'ADA' : 'ada', `198.51.100.${i}`));
  expect(ada).toEqual([200, 200, 200, 200, 200, 429]);
  // The refused attempt counted nothing for its address: 198.51.100.6 still has 20.
  const other = [];
  for (let i = 0; i < 21; i++) other.push(await attempt(`user${i}`, '198.51.100.6'));
  expect(other.filter((s) => s === 200)).toHaveLength(20);
  expect(other[20]).toBe(429);
  const denied = await request(url).post('/login').set('X-Forwarded-For', '198.51.100.6').send({ username: 'bob' });
  expect(denied.body.message).toBe('Too many login attempts, please try again later.');
});

test("windowMs + limit -> limits: several windows in one call, all or nothing; DAY, HOUR, MINUTE -> '1d', '3h', '90s'", async () => {
  const limiter = limiterOf({
    limits: [
      { limit: 2, window: '10s' },
      { limit: 3, window: '1h' },
    ],
    blockCache: false,
  });
  expect(await statuses(await appOf(limiter), 3)).toEqual([200, 200, 429]);
  // The refused request consumed nothing of the hour: 1 left there, not 0.
  expect((await limiter.limiter.peek('ip:127.0.0.1')).states.find((s) => s.windowMs === 3_600_000)?.remaining).toBe(1);
  const windows = limiterOf({
    limits: [
      { limit: 1, window: '1d' },
      { limit: 1, window: '3h' },
      { limit: 1, window: '90s' },
    ],
  });
  expect(windows.limiter.rules.map((r) => r.windowMs)).toEqual([86_400_000, 10_800_000, 90_000]);
});

test('limit: (req) => number -> plan(req) over named rule sets', async () => {
  const limiter = limiterOf({
    limits: { free: [{ limit: 2, window: '1h' }], premium: [{ limit: 4, window: '1h' }] },
    plan: (req) => (req.get('x-plan') === 'premium' ? 'premium' : 'free'),
  });
  const url = await appOf(limiter);
  expect(await statuses(url, 3, '/', { 'x-forwarded-for': '198.51.100.1' })).toEqual([200, 200, 429]);
  expect(await statuses(url, 5, '/', { 'x-forwarded-for': '198.51.100.2', 'x-plan': 'premium' })).toEqual([200, 200, 200, 200, 429]);
});

test('message: a string is the JSON message, a function may be async; a plain-text body is a handler', async () => {
  const text = 'Too many requests, please try again later.';
  const string = await appOf(limiterOf({ message: text }));
  await request(string).get('/');
  expect((await request(string).get('/')).body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: text });
  const fn = await appOf(limiterOf({ message: async (req, decision) => ({ error: `${req.path}: ${decision.limit} a minute` }) }));
  await request(fn).get('/');
  expect((await request(fn).get('/')).body).toEqual({ error: '/: 1 a minute' });
  const plain = await appOf(limiterOf({ handler: (_req, res) => void res.status(429).type('text').send(text) }));
  await request(plain).get('/');
  const denied = await request(plain).get('/');
  expect([denied.headers['content-type'], denied.text]).toEqual(['text/plain; charset=utf-8', text]);
});

test("standardHeaders: 'draft-6' | 'draft-7' -> headers; legacyHeaders -> 'legacy'; identifier -> name", async () => {
  const draft6 = await request(await appOf(limiterOf({ limits: { limit: 5, window: '1m' }, headers: 'draft-6' }))).get('/');
  expect(draft6.headers).toMatchObject({ 'ratelimit-policy': '5;w=60', 'ratelimit-limit': '5', 'ratelimit-remaining': '4' });
  const draft7 = await request(await appOf(limiterOf({ limits: { limit: 5, window: '1m' }, headers: 'draft-7' }))).get('/');
  expect(draft7.headers).toMatchObject({
    'ratelimit-policy': '5;w=60',
    ratelimit: expect.stringMatching(/^limit=5, remaining=4, reset=\d+$/),
  });
  const legacy = await request(await appOf(limiterOf({ limits: { limit: 5, window: '1m' }, headers: 'legacy' }))).get('/');
  expect(legacy.headers).toMatchObject({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '4' });
  expect(legacy.headers['ratelimit']).toBeUndefined();
  // identifier: 'api' -> name: 'api', the draft-8 item "api-<window>".
  const named = await request(await appOf(limiterOf({ name: 'api', limits: { limit: 5, window: '15m' } }))).get('/');
  expect(named.headers['ratelimit-policy']).toBe('"api-15m";q=5;w=900');
});

test("standardHeaders: 'draft-8' with legacyHeaders: true -> headers: ['draft-8', 'legacy'], one middleware, counted once", async () => {
  const url = await appOf(limiterOf({ limits: { limit: 4, window: '1m' }, headers: ['draft-8', 'legacy'] }));
  const got: request.Response[] = [];
  for (let i = 0; i < 5; i++) got.push(await request(url).get('/'));
  // The recipe it replaces, a second middleware on the same `limiter` for the legacy headers, answered 200 200 429 429 429.
  expect(got.map((r) => r.status)).toEqual([200, 200, 200, 200, 429]);
  expect(got[0]!.headers).toMatchObject({ ratelimit: expect.stringMatching(/^"1m";r=3;t=\d+$/), 'x-ratelimit-remaining': '3' });
});

test("standardHeaders: false, legacyHeaders: false -> headers: false: Retry-After stays; omitHeaders: ['Retry-After'] drops it", async () => {
  const none = await appOf(limiterOf({ headers: false }));
  const first = await request(none).get('/');
  expect(Object.keys(first.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
  expect(Number((await request(none).get('/')).headers['retry-after'])).toBeGreaterThanOrEqual(1);
  const bare = await appOf(limiterOf({ headers: false, omitHeaders: ['Retry-After'] }));
  await request(bare).get('/');
  const denied = await request(bare).get('/');
  expect([denied.status, denied.headers['retry-after']]).toEqual([429, undefined]);
});

test('store: omit redis for the in-memory store', async () => {
  const limiter = limiterOf({ redis: undefined, limits: { limit: 2, window: '1m' } });
  expect(await statuses(await appOf(limiter), 3)).toEqual([200, 200, 429]);
});

test("keyGenerator returning an array -> identify extends the defaults ([...defaults, 'tenant:' + t])", async () => {
  const limiter = limiterOf({
    limits: [
      { limit: 3, window: '1m', for: 'tenant' },
      { limit: 100, window: '1m', for: 'ip' },
    ],
    identify: (req, defaults) => [...defaults, `tenant:${req.get('x-tenant')}`],
  });
  const url = await appOf(limiter);
  const from = async (ip: string, tenant: string): Promise<number> =>
    (await request(url).get('/').set({ 'x-forwarded-for': ip, 'x-tenant': tenant })).status;
  // Three addresses share tenant a's 3; tenant b has its own.
  expect([await from('198.51.100.1', 'a'), await from('198.51.100.2', 'a'), await from('198.51.100.3', 'a')]).toEqual([200, 200, 200]);
  expect([await from('198.51.100.4', 'a'), await from('198.51.100.4', 'b')]).toEqual([429, 200]);
});

test('ipKeyGenerator(req.ip, subnet) -> normaliseIp(req.ip, subnet); ipv6Subnet as a function -> identify with normaliseIp', async () => {
  expect(normaliseIp('2001:db8:1:2::7', 56)).toBe(normaliseIp('2001:db8:1:ff::1', 56));
  expect(normaliseIp('::ffff:198.51.100.7', 56)).toBe('198.51.100.7');
  // ipv6Subnet: (req) => (req.ip.startsWith('2001:db8:') ? 64 : 56)
  const subnetFor = (ip: string): number => (ip.startsWith('2001:db8:') ? 64 : 56);
  const limiter = limiterOf({ identify: (req) => `ip:${normaliseIp(req.ip, subnetFor(req.ip ?? ''))}` });
  const url = await appOf(limiter);
  const from = async (ip: string): Promise<number> => (await request(url).get('/').set('x-forwarded-for', ip)).status;
  // /64 under 2001:db8::, /56 elsewhere.
  expect([
    await from('2001:db8:0:1::1'),
    await from('2001:db8:0:2::1'),
    await from('2001:db9:0:1::1'),
    await from('2001:db9:0:2::1'),
  ]).toEqual([200, 200, 200, 429]);
});

test('requestPropertyName -> copy req.rateLimit in a middleware; its fields; used = limit - remaining; getKey -> peek', async () => {
  const limiter = limiterOf({ limits: { limit: 5, window: '1m' } });
  const app = express();
  app.use(limiter, (req, _res, next) => {
    (req as Request & { quota?: Decision }).quota = req.rateLimit;
    next();
  });
  app.get('/', (req, res) => {
    const quota = (req as Request & { quota?: Decision }).quota!;
    res.json({
      limit: quota.limit,
      remaining: quota.remaining,
      used: quota.limit - quota.remaining,
      resetAt: quota.resetAt,
      resetMs: quota.resetMs,
    });
  });
  const url = await serve(app);
  await request(url).get('/');
  const { body } = await request(url).get('/');
  expect(body).toMatchObject({ limit: 5, remaining: 3, used: 2 });
  expect(body.resetAt).toBeGreaterThan(Date.now());
  expect(body.resetMs).toBeGreaterThan(0);
  // limiter.getKey(key) -> limiter.limiter.peek(identifier): the decision a request would get, consuming nothing.
  expect((await limiter.limiter.peek('ip:127.0.0.1')).remaining).toBe(3);
  expect((await limiter.limiter.peek('ip:127.0.0.1')).remaining).toBe(3);
});

test('skip -> also allow: [...] lists (IPs, CIDRs, identifiers)', async () => {
  const url = await appOf(limiterOf({ allow: ['198.51.100.0/24'] }));
  expect(await statuses(url, 3, '/', { 'x-forwarded-for': '198.51.100.7' })).toEqual([200, 200, 200]);
  expect(await statuses(url, 2, '/', { 'x-forwarded-for': '203.0.113.7' })).toEqual([200, 429]);
});

test('skipSuccessfulRequests, skipFailedRequests and requestWasSuccessful(req, res)', async () => {
  const app = express();
  const answer: RequestHandler = (req, res) => void res.status(Number(req.get('x-status') ?? 200)).end();
  const prefix = uniquePrefix('erl');
  app.get('/successful', limiterOf({ prefix, name: 's', limits: { limit: 2, window: '1m' }, skipSuccessfulRequests: true }), answer);
  app.get('/failed', limiterOf({ prefix, name: 'f', limits: { limit: 2, window: '1m' }, skipFailedRequests: true }), answer);
  app.get(
    '/judged',
    limiterOf({
      prefix,
      name: 'j',
      limits: { limit: 2, window: '1m' },
      skipFailedRequests: true,
      requestWasSuccessful: (_req, res) => res.statusCode < 500, // a 404 counts as a success here
    }),
    answer,
  );
  const url = await serve(app);
  const run = async (path: string, status: number, n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      out.push((await request(url).get(path).set('x-status', String(status))).status);
      await settled(); // the refund its response set off, if any, has reached the store
    }
    return out;
  };
  expect(await run('/successful', 200, 4)).toEqual([200, 200, 200, 200]);
  expect(await run('/successful', 500, 3)).toEqual([500, 500, 429]);
  expect(await run('/failed', 500, 4)).toEqual([500, 500, 500, 500]);
  expect(await run('/failed', 200, 3)).toEqual([200, 200, 429]);
  expect(await run('/judged', 404, 3)).toEqual([404, 404, 429]);
});

test('validate -> warnings (false, or per warning); logger -> logger: { warn(message) }', async () => {
  const seen: string[] = [];
  const logger = { warn: (m: string) => void seen.push(m) };
  const untrusted = async (options: Pick<RateLimitBaseOptions, 'warnings'>): Promise<void> => {
    resetWarnings();
    const app = express(); // trust proxy off: an X-Forwarded-For it cannot trust
    app.use(limiterOf({ limits: { limit: 5, window: '1m' }, logger, ...options }));
    app.get('/', ok);
    await request(await serve(app))
      .get('/')
      .set('x-forwarded-for', '198.51.100.7');
  };
  await untrusted({});
  expect(seen).toEqual([expect.stringContaining('forwarded-header-untrusted')]);
  await untrusted({ warnings: { 'forwarded-header-untrusted': false } });
  await untrusted({ warnings: false });
  expect(seen).toHaveLength(1);
});

test('express-slow-down -> slowDown({ delayAfter, delayMs }) from @floodgate/express, leaving req.slowDown', async () => {
  const app = express();
  app.use(closed(slowDown({ redis, prefix: uniquePrefix('erl'), limits: { limit: 100, window: '1m' }, delayAfter: 1, delayMs: 300 })));
  app.get('/', (req, res) => void res.json({ delayMs: req.slowDown?.delayMs, used: req.slowDown?.used }));
  const url = await serve(app);
  expect((await request(url).get('/')).body).toEqual({ delayMs: 0, used: 1 });
  const started = performance.now();
  expect((await request(url).get('/')).body).toEqual({ delayMs: 300, used: 2 });
  expect(performance.now() - started).toBeGreaterThanOrEqual(250);
});

test("rate-limit-redis: sendCommand -> redis (ioredis or node-redis); prefix 'rl:' -> prefix 'rl' + name: keys <prefix>:<name>:<algorithm>:{<id>}", async () => {
  expect(() => rateLimit({ redis, prefix: 'rl:', limits: { limit: 1, window: '1m' } })).toThrow(
    expect.objectContaining({ option: 'prefix', message: expect.stringContaining("prefix 'rl' gives keys that start 'rl:'") }),
  );
  // The client as rate-limit-redis's sendCommand had it: ioredis, nothing re-sent after a reconnect (a check counted once)...
  const ioredis = connect(undefined, { autoResendUnfulfilledCommands: false });
  // ... or node-redis, connected.
  const nodeRedis = createClient({ url: testRedisUrl() });
  nodeRedis.on('error', () => undefined);
  await nodeRedis.connect();
  closed({ close: () => nodeRedis.destroy() });
  for (const client of [ioredis, nodeRedis]) {
    const prefix = uniquePrefix('rl');
    const url = await appOf(limiterOf({ redis: client as RateLimitOptions['redis'], prefix, name: 'api' }));
    expect(await statuses(url, 2)).toEqual([200, 429]);
    expect(await redis.exists(`${prefix}:api:sw2:{ip:127.0.0.1}`)).toBe(1);
  }
});

test('behaviour: penalty: true counts refused requests; fixed-window resets on the clock; manual blocks are prefix-wide; blockCache: false', async () => {
  let now = Date.UTC(2026, 0, 1, 0, 0, 0);
  const clock = (): number => now;
  const penalised = limiterOf({ limits: { limit: 2, window: '1m' }, penalty: true, algorithm: 'fixed-window', clock });
  const url = await appOf(penalised);
  expect(await statuses(url, 4)).toEqual([200, 200, 429, 429]);
  expect((await penalised.limiter.peek('ip:127.0.0.1')).remaining).toBe(0);
  // The fixed window ends on the clock's minute for every client.
  now = Date.UTC(2026, 0, 1, 0, 1, 0);
  expect(await statuses(url, 1)).toEqual([200]);
  // A manual block, from one limiter, holds in every limiter of the prefix.
  const prefix = uniquePrefix('erl');
  const a = limiterOf({ prefix, name: 'a', limits: { limit: 100, window: '1m' } });
  const b = limiterOf({ prefix, name: 'b', limits: { limit: 100, window: '1m' }, blockCache: false });
  const both = await appOf(a, b);
  await a.limiter.block('ip:127.0.0.1', { duration: '10m' });
  expect(await statuses(both, 1)).toEqual([429]);
  await b.limiter.unblock('ip:127.0.0.1');
  expect(await statuses(both, 1)).toEqual([200]);
});
