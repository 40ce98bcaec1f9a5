import express, { type Request } from 'express';
import request from 'supertest';
import { createLimiter, type Decision, type Limiter } from '@floodgate/core';
import { closeClients, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit } from '@floodgate/express';

/*
 * docs/migrating/express-rate-limit.md, checked: express-rate-limit's (and rate-limit-redis's) documented
 * examples as the guide rewrites them, against real Express apps and the test Redis, asserting what
 * express-rate-limit documents for each (and what the guide says differs).
 */
const redis = connect();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});
afterAll(closeClients);

async function serve(app: express.Express): Promise<string> {
  const served = await serveHttp(app.listen(0, '127.0.0.1'));
  closers.push(served.close);
  return served.url;
}
const ok = (_req: Request, res: express.Response): void => void res.json({ ok: true });
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
  closers.push(limiter.close);
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
  closers.push(auth.close, reset.close);
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
  closers.push(limiter.close);
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
  closers.push(limiter.close);
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
  closers.push(limiter.close);
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

test('passOnStoreError: false (the default) -> failure: closed; true -> failure: open', async () => {
  const { startRedis } = await import('@floodgate/testing');
  const server = await startRedis();
  const down = connect(server.url);
  const prefix = uniquePrefix('erl');
  const closed = rateLimit({
    redis: down,
    prefix,
    name: 'closed',
    limits: { limit: 5, window: '1m' },
    failure: 'closed',
    timeoutMs: 100,
    logger: { warn: () => undefined },
  });
  const open = rateLimit({
    redis: down,
    prefix,
    name: 'open',
    limits: { limit: 5, window: '1m' },
    failure: 'open',
    timeoutMs: 100,
    logger: { warn: () => undefined },
  });
  closers.push(closed.close, open.close);
  const app = express();
  app.get('/closed', closed, ok);
  app.get('/open', open, ok);
  const url = await serve(app);
  expect((await request(url).get('/closed')).status).toBe(200);
  await server.stop();
  expect((await request(url).get('/closed')).status).toBe(503);
  expect((await request(url).get('/open')).status).toBe(200);
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
  closers.push(login.close);
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
