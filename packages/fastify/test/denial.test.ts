import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import request from 'supertest';
import { Writable } from 'node:stream';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit, { RateLimitError, type RateLimitPluginBaseOptions, type RateLimitPluginOptions } from '@floodgate/fastify';

/*
 * How a denial leaves Fastify. When nothing but Fastify's default error handler would see the thrown
 * RateLimitError, the hook sends the same response itself (it skips Fastify's error machinery, most of a
 * denied request's cost); everywhere else the error is thrown, so the app's handlers, hooks, schemas and
 * logs see it. These tests hold both halves: the same bytes either way, and the error wherever it is due.
 */
const redis = connect();
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

// A test clock: both apps of a comparison deny at the same instant, so Retry-After and RateLimit agree.
const T = Date.UTC(2026, 10, 23, 12, 0, 30);
const clock = (): number => T;

type Setup = (app: FastifyInstance) => void;

/** An app limiting 1 per minute (fixed window, so Retry-After is 30 at T), `before` run before the plugin registers. */
async function appWith(
  options: RateLimitPluginBaseOptions,
  before: Setup = () => undefined,
  route?: Setup,
  fastifyOptions: FastifyServerOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions);
  apps.push(app);
  before(app);
  await app.register(rateLimit, {
    redis,
    prefix: uniquePrefix('fyd'),
    clock,
    algorithm: 'fixed-window',
    limits: { limit: 1, window: '1m' },
    ...options,
  } as RateLimitPluginOptions);
  if (route) route(app);
  else app.get('/', async () => ({ ok: true }));
  await app.ready();
  return app;
}

/** Status, the headers a client sees (without Date and Connection), and the body, of the nth request. */
async function nth(app: FastifyInstance, n: number): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  let res: request.Response | undefined;
  for (let i = 0; i < n; i++) res = await request(app.server).get('/');
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...headers } = res!.headers as Record<string, unknown>;
  return { status: res!.status, headers, text: res!.text };
}

const MESSAGES: [string, RateLimitPluginBaseOptions][] = [
  ['the default message', {}],
  ['a string message', { message: 'Slow down, please.' }],
  ['an object message', { message: { error: 'slow_down', docs: 'https://example.com/limits' } }],
  ['a function message', { message: (_req: unknown, d: { limit: number }) => ({ error: 'slow_down', limit: d.limit }) }],
];

describe.each(MESSAGES)('with %s', (_name, options) => {
  test('the direct denial and the thrown one are byte for byte the same, from Redis and from the block cache', async () => {
    const thrown: unknown[] = [];
    const direct = await appWith(options);
    // An onError hook that only watches: the denial must be thrown so that it runs.
    const viaError = await appWith(options, (app) => app.addHook('onError', async (_req, _reply, error) => void thrown.push(error)));
    const fromRedis = [await nth(direct, 2), await nth(viaError, 2)];
    expect(fromRedis[0]!.status).toBe(429);
    expect(fromRedis[0]).toEqual(fromRedis[1]);
    expect(fromRedis[0]!.headers['retry-after']).toBe('30');
    // The third request of each is answered from the block cache, without Redis: the same bytes again.
    const fromCache = [await nth(direct, 1), await nth(viaError, 1)];
    expect(fromCache[0]).toEqual(fromRedis[0]);
    expect(fromCache[1]).toEqual(fromRedis[0]);
    expect(thrown).toHaveLength(2);
    expect(thrown.every((e) => e instanceof RateLimitError)).toBe(true);
  });
});

describe('the RateLimitError still reaches', () => {
  test("a route's own errorHandler", async () => {
    const seen: unknown[] = [];
    const app = await appWith({}, undefined, (a) =>
      a.get(
        '/',
        {
          errorHandler: (error, _req, reply) => {
            seen.push(error);
            void reply.status(429).send({ route: 'handled' });
          },
        },
        async () => ({ ok: true }),
      ),
    );
    const denied = await nth(app, 2);
    expect(denied.status).toBe(429);
    expect(JSON.parse(denied.text)).toEqual({ route: 'handled' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(RateLimitError);
  });

  test("a 429 response schema: Fastify's default handler serialises its error payload through it", async () => {
    const app = await appWith({ message: { error: 'slow_down', secret: 'not in the schema' } }, undefined, (a) =>
      a.get(
        '/',
        {
          schema: { response: { 429: { type: 'object', properties: { error: { type: 'string' } } } } },
        },
        async () => ({ ok: true }),
      ),
    );
    const denied = await nth(app, 2);
    expect(denied.status).toBe(429);
    // Fastify's { statusCode, code, error, message } for the thrown error, cut to what the schema names (a
    // direct send would have answered Floodgate's body, `secret` included).
    expect(JSON.parse(denied.text)).toEqual({ error: 'Too Many Requests' });
  });

  test("Fastify's request log at info level, as for any error the default handler answers", async () => {
    const lines: { msg?: string; res?: { statusCode?: number } }[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    const app = await appWith({}, undefined, undefined, { logger: { level: 'info', stream } });
    const denied = await nth(app, 2);
    expect(denied.status).toBe(429);
    expect(lines.some((l) => l.res?.statusCode === 429 && /rate limit|too many/i.test(l.msg ?? ''))).toBe(true);
  });
});

test('a request whose routeOptions an earlier hook hid is still denied properly (the denial is thrown)', async () => {
  const app = await appWith({}, (a) =>
    a.addHook('onRequest', async (req) => {
      Object.defineProperty(req, 'routeOptions', { value: undefined, configurable: true });
    }),
  );
  const first = await nth(app, 1);
  expect(first.status).toBe(200);
  const denied = await nth(app, 1);
  expect(denied.status).toBe(429);
  expect(denied.headers['retry-after']).toBe('30');
  expect(JSON.parse(denied.text)).toMatchObject({ statusCode: 429 });
});

test("a direct denial still runs the app's onSend and onResponse hooks", async () => {
  const finished: number[] = [];
  const app = await appWith({}, (a) => {
    a.addHook('onSend', async (_req, reply, payload) => {
      void reply.header('x-on-send', 'ran');
      return payload;
    });
    a.addHook('onResponse', async (_req, reply) => void finished.push(reply.statusCode));
  });
  const denied = await nth(app, 2);
  expect(denied.status).toBe(429);
  expect(denied.headers['x-on-send']).toBe('ran');
  expect(finished).toEqual([200, 429]);
});

test("an object body is restored before the app's own onSend hooks see the payload, wherever they were added", async () => {
  const thrown: unknown[] = [];
  const app = await appWith(
    { message: { error: 'slow_down' } },
    (a) => a.addHook('onError', async (_req, _reply, error) => void thrown.push(error)),
    (a) => {
      a.get('/', async () => ({ ok: true }));
      // Added after the plugin: an envelope around every JSON payload.
      a.addHook('onSend', async (_req, _reply, payload) => (typeof payload === 'string' ? `{"data":${payload}}` : payload));
    },
  );
  const denied = await nth(app, 2);
  expect(denied.status).toBe(429);
  expect(thrown).toHaveLength(1);
  expect(JSON.parse(denied.text)).toEqual({ data: { error: 'slow_down' } });
});
