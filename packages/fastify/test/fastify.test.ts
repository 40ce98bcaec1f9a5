import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import request from 'supertest';
import { type Logger } from '@floodgate/core';
import { resetWarnings } from '@floodgate/core/adapter';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit, {
  RateLimitError,
  rateLimit as named,
  type RateLimitPluginBaseOptions,
  type RateLimitPluginOptions,
} from '@floodgate/fastify';

const redis = connect();
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

const base = (extra: RateLimitPluginBaseOptions = {}): RateLimitPluginOptions =>
  ({
    redis,
    prefix: uniquePrefix('fy'),
    limits: { limit: 2, window: '1m' },
    ...extra,
  }) as RateLimitPluginOptions;

async function appWith(
  options: RateLimitPluginOptions,
  routes: (app: FastifyInstance) => void,
  fastifyOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions);
  apps.push(app);
  await app.register(rateLimit, options);
  routes(app);
  await app.ready();
  return app;
}

const statuses = async (app: FastifyInstance, n: number, path = '/', method: 'get' | 'head' = 'get'): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(app.server)[method](path)).status);
  return out;
};

test('the default export and the named rateLimit are the same plugin', () => {
  expect(named).toBe(rateLimit);
});

test("the app's error handler shapes a denial: a RateLimitError with statusCode, decision and body; headers already set", async () => {
  const seen: RateLimitError[] = [];
  const app = Fastify();
  apps.push(app);
  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof RateLimitError) {
      seen.push(error);
      return reply.status(error.statusCode).send({ code: 'SLOW_DOWN', retryMs: error.decision.retryAfterMs });
    }
    return reply.status(500).send({ code: 'BUG' });
  });
  await app.register(rateLimit, base({ limits: { limit: 1, window: '1m' }, message: { ignored: 'by the custom handler' } }));
  app.get('/', async (req) => ({ remaining: req.rateLimit?.remaining }));
  await app.ready();
  expect((await request(app.server).get('/')).body).toEqual({ remaining: 0 });
  const denied = await request(app.server).get('/');
  expect(denied.status).toBe(429);
  expect(denied.body).toEqual({ code: 'SLOW_DOWN', retryMs: expect.any(Number) });
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(denied.headers['ratelimit']).toMatch(/^"1m";r=0;t=\d+$/);
  expect(seen).toHaveLength(1);
  expect(seen[0]!.statusCode).toBe(429);
  expect(seen[0]!.body).toEqual({ ignored: 'by the custom handler' });
  expect(seen[0]!.decision.allowed).toBe(false);
});

test('global: false limits only the routes that ask, with the plugin store settings inherited', async () => {
  const app = await appWith(base({ global: false, limits: undefined }), (a) => {
    a.get('/', async () => ({ ok: true }));
    a.get('/limited', { config: { rateLimit: { name: 'limited', limits: { limit: 1, window: '1m' } } } }, async () => ({ ok: true }));
  });
  const open = await request(app.server).get('/');
  expect(open.headers['ratelimit-policy']).toBeUndefined();
  expect(await statuses(app, 3)).toEqual([200, 200, 200]);
  expect(await statuses(app, 2, '/limited')).toEqual([200, 429]);
});

test('config.rateLimit: false exempts a route from the global limit', async () => {
  const app = await appWith(base({ limits: { limit: 1, window: '1m' } }), (a) => {
    a.get('/', async () => ({ ok: true }));
    a.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));
  });
  expect(await statuses(app, 2)).toEqual([200, 429]);
  const health = await request(app.server).get('/health');
  expect(health.status).toBe(200);
  expect(health.headers['ratelimit']).toBeUndefined();
});

test("an automatic HEAD route shares its GET route's limiter (one budget, no duplicate limiter)", async () => {
  // With a clock, the in-memory store belongs to one limiter object, so a second limiter made for HEAD
  // would have a budget of its own; with Redis two same-named limiters would share keys and hide that.
  const app = await appWith({ global: false, clock: () => Date.now() }, (a) => {
    a.get('/', { config: { rateLimit: { name: 'page', limits: { limit: 3, window: '1m' } } } }, async () => ({ ok: true }));
  });
  expect(await statuses(app, 2, '/', 'head')).toEqual([200, 200]);
  expect(await statuses(app, 2)).toEqual([200, 429]);
  expect(await statuses(app, 1, '/', 'head')).toEqual([429]);
});

test('hook: preHandler sees a user that a later auth hook sets; onRequest does not', async () => {
  const userRules = {
    limits: [
      { limit: 1, window: '1m', for: 'user' },
      { limit: 100, window: '1m', for: 'ip' },
    ],
  };
  const auth = (a: FastifyInstance): void => {
    a.addHook('preValidation', async (req) => {
      (req as FastifyRequest & { user?: { id: string } }).user = { id: 'ada' };
    });
    a.get('/', async (req) => ({ kinds: req.rateLimit?.states.map((s) => s.identifier.split(':')[0]) }));
  };
  const early = await appWith(base(userRules), auth);
  expect(await statuses(early, 2)).toEqual([200, 200]);
  const late = await appWith(base({ ...userRules, hook: 'preHandler' }), auth);
  expect((await request(late.server).get('/')).body.kinds.sort()).toEqual(['ip', 'user']);
  expect(await statuses(late, 1)).toEqual([429]);
});

test('a route limiter may run in its own hook, e.g. preValidation to identify by the parsed body', async () => {
  const app = await appWith(base({ limits: { limit: 50, window: '1m' } }), (a) => {
    const login = {
      name: 'login',
      limits: { limit: 1, window: '1m' },
      hook: 'preValidation' as const,
      identify: (req: FastifyRequest) => `account:${String((req.body as { username?: string }).username)}`,
    };
    a.post('/login', { config: { rateLimit: login } }, async () => ({ ok: true }));
  });
  const login = (username: string) => request(app.server).post('/login').send({ username });
  expect((await login('ada')).status).toBe(200);
  const denied = await login('ada');
  expect(denied.status).toBe(429);
  expect(denied.headers['ratelimit-policy']).toBe('"1m";q=50;w=60, "login-1m";q=1;w=60');
  expect((await login('grace')).status).toBe(200);
});

test('bad options fail at register time, bad route config at route time, each naming the option', async () => {
  await expect(
    Fastify()
      .register(rateLimit, base({ hook: 'onSend' as 'onRequest' }))
      .ready(),
  ).rejects.toMatchObject({ code: 'ERR_FLOODGATE_CONFIG', option: 'hook' });
  await expect(
    Fastify()
      .register(rateLimit, base({ global: 'yes' as unknown as boolean }))
      .ready(),
  ).rejects.toMatchObject({ option: 'global' });
  await expect(
    Fastify()
      .register(rateLimit, { ...base(), max: 5 } as unknown as RateLimitPluginOptions)
      .ready(),
  ).rejects.toMatchObject({ option: 'max' });
  const app = Fastify();
  await app.register(rateLimit, base());
  expect(() => app.get('/', { config: { rateLimit: 5 as unknown as false } }, async () => 'x')).toThrow(
    expect.objectContaining({ option: 'config.rateLimit' }),
  );
  expect(() =>
    app.get(
      '/b',
      { config: { rateLimit: { name: 'b', limits: { limit: 1, window: '1m' }, hook: 'late' as 'onRequest' } } },
      async () => 'x',
    ),
  ).toThrow(expect.objectContaining({ option: 'config.rateLimit.hook' }));
  await app.close();
});

test('request.ip (a getter: proxy-addr under trustProxy) is read once a request when no X-Forwarded-For came', async () => {
  resetWarnings();
  const app = Fastify({ trustProxy: '127.0.0.1' });
  apps.push(app);
  let reads = 0;
  // Before the plugin's hook: each request's ip becomes a counting getter over Fastify's own.
  app.addHook('onRequest', (req, _reply, done) => {
    const proto = Object.getPrototypeOf(req) as object;
    const own = Object.getOwnPropertyDescriptor(proto, 'ip') ?? Object.getOwnPropertyDescriptor(Object.getPrototypeOf(proto), 'ip')!;
    Object.defineProperty(req, 'ip', {
      get() {
        reads++;
        return own.get!.call(req) as string;
      },
    });
    done();
  });
  await app.register(rateLimit, base({ limits: { limit: 9, window: '1m' }, logger: { warn: () => undefined } }));
  app.get('/', async () => 'ok');
  await app.ready();
  for (let i = 0; i < 3; i++) expect((await request(app.server).get('/')).status).toBe(200);
  expect(reads).toBe(3);
});

test('trustProxy: true is warned about once, when the leftmost X-Forwarded-For entry became request.ip', async () => {
  resetWarnings();
  const warnings: string[] = [];
  const logger: Logger = { warn: (m) => warnings.push(m) };
  const app = await appWith(base({ limits: { limit: 1, window: '1m' }, logger }), (a) => a.get('/', async (req) => ({ ip: req.ip })), {
    trustProxy: true,
  });
  const first = await request(app.server).get('/').set('X-Forwarded-For', '6.6.6.6, 10.0.0.1');
  expect(first.body).toEqual({ ip: '6.6.6.6' });
  // The spoofed leftmost entry is a fresh identity each time: exactly what the warning is about.
  expect((await request(app.server).get('/').set('X-Forwarded-For', '7.7.7.7, 10.0.0.1')).status).toBe(200);
  expect(warnings.filter((w) => w.includes('[trust-proxy-all]'))).toHaveLength(1);
});
