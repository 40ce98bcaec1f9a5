import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import request from 'supertest';
import { createLimiter, normaliseIp, type Limiter } from '@floodgate/core';
import { closeAfterEach, connect, startRedis, uniquePrefix } from '@floodgate/testing';
import rateLimit, { RateLimitError, type RateLimitHookHandler, type RouteRateLimitOptions } from '@floodgate/fastify';

/*
 * docs/migrating/fastify-rate-limit.md, checked: @fastify/rate-limit's README examples as the guide rewrites
 * them, and every row of its options table, against real Fastify apps (over sockets) and the test Redis,
 * asserting what @fastify/rate-limit documents (and what the guide says differs).
 */
const redis = connect();
const closed = closeAfterEach();

function app(options: FastifyServerOptions = {}): FastifyInstance {
  return closed(Fastify(options));
}
/** A limiter of the test's own, closed after it. */
const limiterOf = (options: Parameters<typeof createLimiter>[0]): Limiter =>
  closed(createLimiter({ redis, prefix: uniquePrefix('frl'), ...options }));
/** app.rateLimit(...) typed as @floodgate/fastify declares it (this repository's bench also installs @fastify/rate-limit, whose declaration would win here). */
const limitHook = (a: FastifyInstance, options?: RouteRateLimitOptions): RateLimitHookHandler =>
  (a.rateLimit as unknown as (o?: RouteRateLimitOptions) => RateLimitHookHandler)(options);
const statuses = async (a: FastifyInstance, n: number, path = '/', set: Record<string, string> = {}): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(a.server).get(path).set(set)).status);
  return out;
};

test("usage: { max: 100, timeWindow: '1 minute' }; request 101 gets 429, the documented body, x-ratelimit-* and retry-after", async () => {
  const fastify = app();
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 100, window: '1m' }, headers: 'legacy' });
  fastify.get('/', async () => ({ hello: 'world' }));
  await fastify.ready();
  const first = await request(fastify.server).get('/');
  expect(first.headers['x-ratelimit-limit']).toBe('100');
  expect(first.headers['x-ratelimit-remaining']).toBe('99');
  // Floodgate's X-RateLimit-Reset is the epoch second of the reset (express-rate-limit's legacy form), not a delta.
  expect(Number(first.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
  expect(new Set(await statuses(fastify, 99))).toEqual(new Set([200]));
  const denied = await request(fastify.server).get('/');
  expect(denied.status).toBe(429);
  expect(denied.headers['x-ratelimit-remaining']).toBe('0');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(denied.body).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds?$/),
  });
});

test('setErrorHandler sees the 429 (a RateLimitError with statusCode) and can change its message', async () => {
  const fastify = app();
  fastify.setErrorHandler(function (error, _request, reply) {
    if (error instanceof RateLimitError && error.statusCode === 429) {
      reply.code(429);
      error.message = 'You hit the rate limit! Slow down please!';
    }
    reply.send(error);
  });
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 1, window: '1m' } });
  fastify.get('/', async () => ({ hello: 'world' }));
  await fastify.ready();
  await request(fastify.server).get('/');
  const denied = await request(fastify.server).get('/');
  expect(denied.status).toBe(429);
  expect(denied.body.message).toBe('You hit the rate limit! Slow down please!');
});

test('404s: setNotFoundHandler({ preHandler: fastify.rateLimit() }) with { max: 2, timeWindow: 1000 }', async () => {
  const fastify = app();
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 2, window: '1m' } }); // timeWindow: 1000 in the README; a minute here, so a slow machine cannot straddle it
  fastify.setNotFoundHandler({ preHandler: limitHook(fastify) }, function (_request, reply) {
    reply.code(404).send({ hello: 'world' });
  });
  await fastify.ready();
  expect(await statuses(fastify, 3, '/guess')).toEqual([404, 404, 429]);
});

test('route options: global: false with routes of their own, rateLimit: false, and a group shared by two routes (groupId)', async () => {
  const fastify = app();
  const prefix = uniquePrefix('frl');
  // global: false, max: 3000, allowList: ['192.168.0.10'], redis
  await fastify.register(rateLimit, { redis, prefix, global: false, skip: (req: FastifyRequest) => ['192.168.0.10'].includes(req.ip) });
  fastify.get('/', { config: { rateLimit: { name: 'root', limits: { limit: 3, window: '1m' } } } }, async () => ({ hello: 'root' }));
  fastify.get('/public', async () => ({ hello: 'public' }));
  // groupId: 'OTP' on both routes -> one shared limiter
  const otp = closed(createLimiter({ redis, prefix, name: 'otp', limits: { limit: 3, window: '1m' } }));
  fastify.get('/otp/send', { config: { rateLimit: { limiter: otp } } }, async () => 'sent');
  fastify.get('/otp/resend', { config: { rateLimit: { limiter: otp } } }, async () => 'resent');
  await fastify.ready();
  expect(await statuses(fastify, 4, '/')).toEqual([200, 200, 200, 429]);
  expect(await statuses(fastify, 4, '/public')).toEqual([200, 200, 200, 200]);
  expect([...(await statuses(fastify, 2, '/otp/send')), ...(await statuses(fastify, 2, '/otp/resend'))]).toEqual([200, 200, 200, 429]);
});

test('a global limit with rateLimit: false on /public and a tighter /private (Floodgate: the route ADDS to the global one)', async () => {
  const fastify = app();
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 100, window: '1m' } });
  fastify.get('/', async () => 'root');
  fastify.get('/public', { config: { rateLimit: false } }, async () => 'public');
  fastify.get('/private', { config: { rateLimit: { name: 'private', limits: { limit: 9, window: '1m' } } } }, async () => 'private');
  await fastify.ready();
  const res = await request(fastify.server).get('/private');
  expect(res.headers['ratelimit-policy']).toBe('"1m";q=100;w=60, "private-1m";q=9;w=60');
  const rest = await statuses(fastify, 9, '/private');
  expect(rest.slice(0, 8)).toEqual(Array(8).fill(200));
  expect(rest[8]).toBe(429);
  const pub = await request(fastify.server).get('/public');
  expect(pub.status).toBe(200);
  expect(pub.headers['ratelimit']).toBeUndefined();
});

test('keyGenerator -> identify; max(request, key) -> cost; errorResponseBuilder -> message; hook: preHandler', async () => {
  const fastify = app();
  fastify.decorateRequest('userId', '');
  fastify.addHook('preHandler', async (req: FastifyRequest & { userId?: string }) => {
    const { userId } = req.query as { userId?: string };
    if (userId) req.userId = userId;
  });
  await fastify.register(rateLimit, {
    redis,
    prefix: uniquePrefix('frl'),
    hook: 'preHandler',
    limits: { limit: 6, window: '1m' },
    // keyGenerator: (request) => request.userId || request.ip
    identify: (req, defaults) => ((req as { userId?: string }).userId ? `user:${(req as { userId?: string }).userId}` : defaults),
    // max: async (request, key) => (key === 'pro' ? 3 : 2): one limit, pro requests cost 2 of 6, others 3
    cost: (req) => ((req as { userId?: string }).userId === 'pro' ? 2 : 3),
    message: (_req, decision) => ({
      statusCode: 429,
      error: 'Too Many Requests',
      message: `I only allow ${decision.limit} units per minute to this Website. Try again soon.`,
      expiresIn: decision.retryAfterMs,
    }),
  });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  expect(await statuses(fastify, 4, '/?userId=pro')).toEqual([200, 200, 200, 429]);
  expect(await statuses(fastify, 3, '/?userId=free')).toEqual([200, 200, 429]);
  const denied = await request(fastify.server).get('/?userId=free');
  expect(denied.body).toMatchObject({ statusCode: 429, message: 'I only allow 6 units per minute to this Website. Try again soon.' });
  expect(denied.body.expiresIn).toBeGreaterThan(0);
});

test('timeWindow as a function -> plan(request) over named rule sets; several windows in one limits array', async () => {
  const planned = async (): Promise<FastifyInstance> => {
    const fastify = app();
    await fastify.register(rateLimit, {
      redis,
      prefix: uniquePrefix('frl'),
      limits: {
        free: [{ limit: 2, window: '1m' }],
        pro: [
          { limit: 4, window: '1m' },
          { limit: 100, window: '1h' },
        ],
      },
      plan: (req) => (req.headers['x-plan'] === 'pro' ? 'pro' : 'free'),
    });
    fastify.get('/', async () => 'ok');
    await fastify.ready();
    return fastify;
  };
  expect(await statuses(await planned(), 3, '/', { 'x-plan': 'free' })).toEqual([200, 200, 429]);
  const pro = await planned();
  expect(await statuses(pro, 5, '/', { 'x-plan': 'pro' })).toEqual([200, 200, 200, 200, 429]);
  expect((await request(pro.server).get('/').set('x-plan', 'pro')).headers['ratelimit-policy']).toBe('"1m";q=4;w=60, "1h";q=100;w=3600');
});

test('cache -> memory: { maxKeys } (no redis: the in-memory store); allowList array -> skip or allow: [...]', async () => {
  const fastify = app();
  await fastify.register(rateLimit, { prefix: uniquePrefix('frl'), limits: { limit: 2, window: '1m' }, memory: { maxKeys: 5000 } });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  expect(await statuses(fastify, 3)).toEqual([200, 200, 429]);

  const listed = app();
  // allowList: ['127.0.0.1'] as a skip, and as the allow list (never limited, no headers).
  await listed.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 1, window: '1m' }, allow: ['127.0.0.1'] });
  listed.get('/', async () => 'ok');
  await listed.ready();
  const res = await request(listed.server).get('/');
  expect([...(await statuses(listed, 3)), res.headers['ratelimit']]).toEqual([200, 200, 200, undefined]);
  const skipped = app();
  await skipped.register(rateLimit, {
    redis,
    prefix: uniquePrefix('frl'),
    limits: { limit: 1, window: '1m' },
    skip: (req: FastifyRequest) => ['127.0.0.1'].includes(req.ip),
  });
  skipped.get('/', async () => 'ok');
  await skipped.ready();
  expect(await statuses(skipped, 3)).toEqual([200, 200, 200]);
});

test("nameSpace -> prefix + name: keys start '<prefix>:<name>:'; the peer's 'my-namespace:' is prefix 'my-namespace'", async () => {
  const fastify = app();
  // nameSpace: 'my-namespace:' would be a ConfigError whose message names the replacement.
  await expect(fastify.register(rateLimit, { redis, prefix: 'my-namespace:', limits: { limit: 1, window: '1m' } })).rejects.toThrow(
    expect.objectContaining({
      option: 'prefix',
      message: expect.stringContaining("prefix 'my-namespace' gives keys that start 'my-namespace:'"),
    }),
  );
  const again = app();
  const prefix = uniquePrefix('my-namespace');
  await again.register(rateLimit, { redis, prefix, name: 'api', limits: { limit: 5, window: '1m' } });
  again.get('/', async () => 'ok');
  await again.ready();
  await request(again.server).get('/');
  expect(await redis.exists(`${prefix}:api:sw2:{ip:127.0.0.1}`)).toBe(1);
});

test('continueExceeding -> penalty: true: a client that keeps hammering stays limited, with the default sliding window', async () => {
  let now = Date.UTC(2026, 0, 1, 0, 0, 0);
  const hammer = async (algorithm: 'sliding-window' | 'fixed-window'): Promise<number[]> => {
    now = Date.UTC(2026, 0, 1, 0, 0, 0);
    const fastify = app();
    await fastify.register(rateLimit, {
      redis,
      prefix: uniquePrefix('frl'),
      limits: { limit: 2, window: '1m' },
      penalty: true,
      algorithm,
      clock: () => now,
    });
    fastify.get('/', async () => 'ok');
    await fastify.ready();
    const out = await statuses(fastify, 2);
    // One request every 10 s for 80 s, each refused and (penalty) counted.
    for (let t = 10; t <= 80; t += 10) {
      now = Date.UTC(2026, 0, 1, 0, 0, t);
      out.push(...(await statuses(fastify, 1)));
    }
    return out;
  };
  // Sliding window: the refused requests fill the window, so the hammering client is refused to the end (as continueExceeding).
  expect(await hammer('sliding-window')).toEqual([200, 200, ...Array(8).fill(429)]);
  // Fixed window: what penalty counted ends with the window, on the clock's minute: let in at 60 s however hard it hammered.
  expect(await hammer('fixed-window')).toEqual([200, 200, 429, 429, 429, 429, 429, 200, 200, 429]);
});

test('ban: 1 (one 429, then 403) -> lockout: { after: ban + 1 } and a 403 from setErrorHandler for a lockout', async () => {
  const banned = async (after: number): Promise<number[]> => {
    const fastify = app();
    fastify.setErrorHandler((error, _request, reply) => {
      if (error instanceof RateLimitError && error.decision.blockReason === 'lockout') return reply.code(403).send({ message: 'banned' });
      return reply.send(error);
    });
    // max: 2, ban: 1
    await fastify.register(rateLimit, {
      redis,
      prefix: uniquePrefix('frl'),
      limits: { limit: 2, window: '1m' },
      lockout: { after, within: '1m', duration: '1m', scope: 'ip' },
    });
    fastify.get('/', async () => 'ok');
    await fastify.ready();
    return statuses(fastify, 5);
  };
  // @fastify/rate-limit with max 2, ban 1: 200 200 429 403 403.
  expect(await banned(1 + 1)).toEqual([200, 200, 429, 403, 403]);
  // after: ban locks out on the ban-th denial itself: no 429 before the 403.
  expect(await banned(1)).toEqual([200, 200, 403, 403, 403]);
});

test('exponentialBackoff -> lockout backoff: each LOCKOUT lasts twice the last, not each request past the limit', async () => {
  let now = Date.UTC(2026, 0, 1, 0, 0, 0);
  const fastify = app();
  await fastify.register(rateLimit, {
    redis,
    prefix: uniquePrefix('frl'),
    algorithm: 'fixed-window',
    limits: { limit: 1, window: '1m' },
    lockout: { after: 1, within: '1m', duration: '1m', backoff: 2, maxDuration: '1h', scope: 'ip' },
    clock: () => now,
  });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  const retryAfter = async (): Promise<[number, string | undefined]> => {
    const res = await request(fastify.server).get('/');
    return [res.status, res.headers['retry-after'] as string | undefined];
  };
  expect(await retryAfter()).toEqual([200, undefined]);
  expect(await retryAfter()).toEqual([429, '60']);
  // Hammering during a lockout does not lengthen it (@fastify/rate-limit would double it per request).
  now += 30_000;
  expect(await retryAfter()).toEqual([429, '30']);
  // The next lockout, after this one ended, lasts twice as long.
  now = Date.UTC(2026, 0, 1, 0, 1, 1);
  expect(await retryAfter()).toEqual([200, undefined]);
  expect(await retryAfter()).toEqual([429, '120']);
});

test('skipOnError: true -> failure open (the default); skipOnError: false -> failure closed, a 503; failure local', async () => {
  const server = await startRedis();
  const down = connect(server.url);
  const fastify = app();
  const prefix = uniquePrefix('frl');
  await fastify.register(rateLimit, { redis: down, prefix, global: false, timeoutMs: 100, logger: { warn: () => undefined } });
  for (const failure of ['open', 'closed', 'local'] as const) {
    fastify.get(`/${failure}`, { config: { rateLimit: { name: failure, limits: { limit: 1, window: '1m' }, failure } } }, async () => 'ok');
  }
  await fastify.ready();
  // Connected first, so Redis goes away under a client that had it (no request counted before: a client
  // known to have used its limit is denied with 429 whatever the policy).
  expect(await down.ping()).toBe('PONG');
  await server.stop();
  const closedRes = await request(fastify.server).get('/closed');
  expect([closedRes.status, Number(closedRes.headers['retry-after']) >= 1]).toEqual([503, true]);
  // 'open': let through while Redis is away, up to each client's limit in this process (1 a minute here).
  expect(await statuses(fastify, 2, '/open')).toEqual([200, 429]);
  // 'local': an in-process limiter with the same rules decides while Redis is away.
  expect(await statuses(fastify, 2, '/local')).toEqual([200, 429]);
  down.disconnect();
});

test('ipv6Subnet: 64 keeps the old grouping (default 56); normalizeIP(ip, subnet) -> normaliseIp(ip, subnet)', async () => {
  expect(normaliseIp('2001:db8:1:2:aaaa::1', 64)).toBe(normaliseIp('2001:db8:1:2:bbbb::2', 64));
  expect(normaliseIp('2001:db8:1:2::1', 64)).not.toBe(normaliseIp('2001:db8:1:3::1', 64));
  expect(normaliseIp('::ffff:198.51.100.7', 64)).toBe('198.51.100.7');
  const fastify = app({ trustProxy: '127.0.0.1' });
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 1, window: '1m' }, ipv6Subnet: 64 });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  const from = async (ip: string): Promise<number> => (await request(fastify.server).get('/').set('X-Forwarded-For', ip)).status;
  // One /64: one budget. Another /64 of the same /56: its own (with the default 56, one budget).
  expect([await from('2001:db8:0:1::1'), await from('2001:db8:0:1::2'), await from('2001:db8:0:2::1')]).toEqual([200, 429, 200]);
});

test('enableDraftSpec -> headers: draft-6; addHeaders -> omitHeaders; addHeadersOnExceeding -> an onSend hook', async () => {
  const fastify = app();
  await fastify.register(rateLimit, {
    redis,
    prefix: uniquePrefix('frl'),
    limits: { limit: 1, window: '1m' },
    headers: 'draft-6',
    omitHeaders: ['RateLimit-Reset'], // addHeaders: { 'ratelimit-reset': false }
  });
  // addHeadersOnExceeding: { 'ratelimit-remaining': false }: only while allowed.
  fastify.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode < 400) reply.removeHeader('ratelimit-remaining');
  });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  const allowed = await request(fastify.server).get('/');
  expect(allowed.headers).toMatchObject({ 'ratelimit-limit': '1', 'ratelimit-policy': '1;w=60' });
  expect([allowed.headers['ratelimit-remaining'], allowed.headers['ratelimit-reset']]).toEqual([undefined, undefined]);
  const denied = await request(fastify.server).get('/');
  expect(denied.headers).toMatchObject({
    'ratelimit-limit': '1',
    'ratelimit-remaining': '0',
    'retry-after': expect.stringMatching(/^\d+$/),
  });
  expect(denied.headers['ratelimit-reset']).toBeUndefined();
});

test('onExceeding -> request.rateLimit in a later hook; onExceeded -> an onError hook that sees the RateLimitError', async () => {
  const fastify = app();
  const exceeding: number[] = [];
  const exceeded: string[] = [];
  await fastify.register(rateLimit, { redis, prefix: uniquePrefix('frl'), limits: { limit: 2, window: '1m' } });
  fastify.addHook('preHandler', async (req) => void exceeding.push(req.rateLimit!.remaining));
  fastify.addHook('onError', async (req, _reply, error) => {
    if (error instanceof RateLimitError) exceeded.push(`${req.ip} ${error.decision.reason}`);
  });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  expect(await statuses(fastify, 3)).toEqual([200, 200, 429]);
  expect({ exceeding, exceeded }).toEqual({ exceeding: [1, 0], exceeded: ['127.0.0.1 limit'] });
});

test('store (a custom store) -> limiter: a wrapper of your own (here a Proxy that charges 2 per request) is asked every time', async () => {
  const inner = limiterOf({ limits: { limit: 4, window: '1m' } });
  const asked: string[] = [];
  const wrapped = new Proxy(inner, {
    get: (target, key) =>
      key === 'check'
        ? (ids: string | readonly string[], options?: { cost?: number }) => {
            asked.push(String(ids));
            return target.check(ids, { ...options, cost: 2 * (options?.cost ?? 1) });
          }
        : Reflect.get(target, key),
  });
  const fastify = app();
  await fastify.register(rateLimit, { limiter: wrapped });
  fastify.get('/', async () => 'ok');
  await fastify.ready();
  expect(await statuses(fastify, 4)).toEqual([200, 200, 429, 429]);
  expect(asked).toHaveLength(4);
});

test('createRateLimit(options) + checkRateLimit(request) -> createLimiter + check; { increment: false } -> peek', async () => {
  const limiter = limiterOf({ name: 'manual', limits: { limit: 2, window: '1m' } });
  const fastify = app();
  fastify.get('/', async (req, reply) => {
    const peeked = await limiter.peek(`ip:${req.ip}`); // checkRateLimit(request, { increment: false })
    const d = await limiter.check(`ip:${req.ip}`);
    if (!d.allowed) return reply.code(429).send({ remainingBefore: peeked.remaining });
    return { remaining: d.remaining, remainingBefore: peeked.remaining };
  });
  await fastify.ready();
  const bodies = [];
  for (let i = 0; i < 3; i++) bodies.push((await request(fastify.server).get('/')).body);
  expect(bodies).toEqual([{ remaining: 1, remainingBefore: 2 }, { remaining: 0, remainingBefore: 1 }, { remainingBefore: 0 }]);
});

test("a route with only its own limit: the global skip leaves it out (skip: (request) => request.routeOptions.url === '/private')", async () => {
  const fastify = app();
  await fastify.register(rateLimit, {
    redis,
    prefix: uniquePrefix('frl'),
    limits: { limit: 100, window: '1m' },
    skip: (req: FastifyRequest) => req.routeOptions.url === '/private',
  });
  fastify.get('/private', { config: { rateLimit: { name: 'private', limits: { limit: 2, window: '1m' } } } }, async () => 'private');
  await fastify.ready();
  const res = await request(fastify.server).get('/private');
  expect(res.headers['ratelimit-policy']).toBe('"private-1m";q=2;w=60');
  expect(await statuses(fastify, 2, '/private')).toEqual([200, 429]);
});

test('two registrations in one scope, as @fastify/rate-limit allows: each limits the routes the other skips', async () => {
  const fastify = app();
  const prefix = uniquePrefix('frl');
  await fastify.register(rateLimit, { redis, prefix, name: 'site', limits: { limit: 1, window: '1m' }, skip: (r) => r.url === '/test' });
  await fastify.register(rateLimit, { redis, prefix, name: 'test', limits: { limit: 1, window: '1m' }, skip: (r) => r.url !== '/test' });
  fastify.get('/', async () => 'hello!');
  fastify.get('/test', async () => 'hello from another route!');
  await fastify.ready();
  expect([...(await statuses(fastify, 2, '/')), ...(await statuses(fastify, 2, '/test'))]).toEqual([200, 429, 200, 429]);
});
