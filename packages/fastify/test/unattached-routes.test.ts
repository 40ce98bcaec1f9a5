import Fastify, { type FastifyInstance } from 'fastify';
import request from 'supertest';
import type { Logger } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit, { type RateLimitPluginBaseOptions, type RateLimitPluginOptions } from '@floodgate/fastify';

/*
 * docs/security.md, "Fastify routes the plugin never saw": the plugin attaches itself to routes in onRoute,
 * so routes registered before it loaded (registered without `await` before the routes, or after them) were
 * never limited, and nothing said so: two requests to a route with a limit of 1 got 200 200, no headers.
 * At ready, the plugin now names every such route of its scope in one warning; `config.rateLimit: false`
 * and `unlimitedRoutes` say a route is left out on purpose. Real apps, over real sockets.
 */

const redis = connect();
const apps: FastifyInstance[] = [];
const warnings: string[] = [];
const logger: Logger = { warn: (message) => void warnings.push(message) };
beforeEach(() => {
  warnings.length = 0;
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

const options = (extra: RateLimitPluginBaseOptions = {}): RateLimitPluginOptions =>
  ({ redis, prefix: uniquePrefix('fy-un'), limits: { limit: 1, window: '1m' }, logger, ...extra }) as RateLimitPluginOptions;
const ok = async () => ({ ok: true });

/** A new app (closed after the test). */
function app(): FastifyInstance {
  const made = Fastify();
  apps.push(made);
  return made;
}

/** Listens on a loopback port and sends `n` GETs to `path`: their statuses, and whether any had a RateLimit header. */
async function statuses(server: FastifyInstance, path: string, n = 2): Promise<string> {
  const url = await server
    .listen({ port: 0, host: '127.0.0.1' })
    .catch(() => `http://127.0.0.1:${(server.server.address() as { port: number }).port}`);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await request(url).get(path);
    out.push(`${res.status}${res.headers.ratelimit === undefined ? '' : '+headers'}`);
  }
  return out.join(' ');
}

const routesNamed = (): string[] => warnings.filter((w) => w.includes('routes-not-limited'));

test('registered without await before the routes: one warning at ready names every route it limits none of', async () => {
  const server = app();
  void server.register(rateLimit, options());
  server.get('/a', ok);
  server.post('/b', ok);
  server.get('/health', { config: { rateLimit: false } }, ok);
  await server.ready();
  // The hole itself is unchanged (the plugin never saw the route); what changed is that it is said.
  expect(await statuses(server, '/a')).toBe('200 200');
  expect(routesNamed()).toHaveLength(1);
  const [warning] = routesNamed();
  expect(warning).toContain('GET /a');
  expect(warning).toContain('POST /b');
  expect(warning).not.toContain('/health');
  expect(warning).toMatch(/await app\.register/);
  expect(warning).toMatch(/unlimitedRoutes/);
});

test('registered after the routes (and after a plugin of routes): those are named; routes registered after it are limited', async () => {
  const server = app();
  server.get('/early', ok);
  void server.register(async (child) => {
    child.get('/child', ok);
  });
  await server.register(rateLimit, options());
  server.get('/late', ok);
  await server.ready();
  expect(await statuses(server, '/late')).toBe('200+headers 429+headers');
  expect(await statuses(server, '/early')).toBe('200 200');
  expect(routesNamed()).toHaveLength(1);
  expect(routesNamed()[0]).toContain('GET /early');
  expect(routesNamed()[0]).toContain('GET /child');
  expect(routesNamed()[0]).not.toContain('/late');
});

test('without a logger of its own, the warning is a process warning', async () => {
  const emitted = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    const server = app();
    void server.register(rateLimit, options({ logger: undefined }));
    server.get('/unseen', ok);
    await server.ready();
    const named = emitted.mock.calls.filter(([message]) => String(message).includes('GET /unseen'));
    expect(named).toHaveLength(1);
    expect(named[0]![1]).toEqual({ code: 'FLOODGATE' });
  } finally {
    emitted.mockRestore();
  }
});

test('unlimitedRoutes silences it for routes left out on purpose, and leaves them unlimited wherever they are registered', async () => {
  const server = app();
  server.get('/health', ok);
  server.get('/docs/json', ok);
  await server.register(rateLimit, options({ unlimitedRoutes: ['/health', '/status', '/docs/*'] }));
  server.get('/status', ok);
  server.get('/docs/static/*', ok);
  server.get('/limited', ok);
  await server.ready();
  expect(warnings).toEqual([]);
  expect(await statuses(server, '/status', 3)).toBe('200 200 200');
  expect(await statuses(server, '/docs/static/x.css', 3)).toBe('200 200 200');
  expect(await statuses(server, '/limited')).toBe('200+headers 429+headers');
});

test('config.rateLimit: false on a route registered before the plugin silences it too', async () => {
  const server = app();
  server.get('/ping', { config: { rateLimit: false } }, ok);
  await server.register(rateLimit, options());
  server.get('/', ok);
  await server.ready();
  expect(warnings).toEqual([]);
});

test('routes outside the scope it was registered in are not its business', async () => {
  const server = app();
  server.get('/outside', ok);
  await server.register(async (child) => {
    await child.register(rateLimit, options());
    child.get('/inside', ok);
  });
  await server.ready();
  expect(warnings).toEqual([]);
  expect(await statuses(server, '/inside')).toBe('200+headers 429+headers');
});

test('global: false names only the routes that asked for a limiter of their own', async () => {
  const server = app();
  server.get('/plain', ok);
  server.get('/search', { config: { rateLimit: { limits: { limit: 1, window: '1m' } } } }, ok);
  await server.register(rateLimit, options({ global: false, limits: undefined } as RateLimitPluginBaseOptions));
  await server.ready();
  expect(routesNamed()).toHaveLength(1);
  expect(routesNamed()[0]).toContain('GET /search');
  expect(routesNamed()[0]).not.toContain('/plain');
});

test('bad unlimitedRoutes, and a listed route with a limiter of its own, are ConfigErrors naming the option', async () => {
  for (const [value, option] of [
    ['/health', 'unlimitedRoutes'],
    [['health'], 'unlimitedRoutes[0]'],
    [[''], 'unlimitedRoutes[0]'],
    [[42], 'unlimitedRoutes[0]'],
  ] as const) {
    await expect(app().register(rateLimit, options({ unlimitedRoutes: value as never }))).rejects.toMatchObject({ option });
  }
  const server = app();
  await server.register(rateLimit, options({ unlimitedRoutes: ['/login'] }));
  expect(() => server.post('/login', { config: { rateLimit: { limits: { limit: 5, window: '1m' } } } }, ok)).toThrow(
    expect.objectContaining({ option: 'config.rateLimit' }),
  );
});
