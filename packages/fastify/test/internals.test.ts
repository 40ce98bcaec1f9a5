import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import request from 'supertest';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import rateLimit from '@floodgate/fastify';
import { defaultErrorHandler, enclosing, plainErrorHandling, quietAtInfo, routeContext, withinScope } from '../src/internals';

/*
 * What src/internals.ts reads of Fastify, checked against the Fastify installed. When an upgrade changes any
 * of it, this fails (the adapter itself stays correct: it then throws every denial, losing only the direct
 * send), so the optimisation is never lost without anyone noticing.
 */
afterAll(closeClients);

test('the internals the direct denial relies on are where internals.ts looks for them', async () => {
  const seen: Record<string, unknown> = {};
  const app = Fastify();
  app.get('/plain', async (req) => {
    const ctx = routeContext(req as FastifyRequest);
    seen.plainContext = ctx !== undefined;
    seen.plainDefault = ctx !== undefined && defaultErrorHandler(ctx);
    seen.plain = ctx !== undefined && plainErrorHandling(ctx, req);
    return {};
  });
  await app.register(async (child) => {
    child.setErrorHandler((_e, _req, reply) => void reply.send({}));
    child.addHook('onError', async () => undefined);
    child.get('/custom', async (req) => {
      const ctx = routeContext(req as FastifyRequest)!;
      seen.customDefault = defaultErrorHandler(ctx);
      seen.customPlain = plainErrorHandling(ctx, req);
      return {};
    });
  });
  app.get('/quiet', async (_req, reply) => ({ quiet: quietAtInfo(reply.log) }));
  await app.ready();
  await request(app.server).get('/plain');
  await request(app.server).get('/custom');
  const quiet = await request(app.server).get('/quiet');
  expect(seen).toEqual({ plainContext: true, plainDefault: true, plain: true, customDefault: false, customPlain: false });
  expect(quiet.body).toEqual({ quiet: true });
  const logged = Fastify({ logger: { level: 'info', stream: { write: () => undefined } } });
  logged.get('/', async (_req, reply) => ({ quiet: quietAtInfo(reply.log) }));
  await logged.ready();
  expect((await request(logged.server).get('/')).body).toEqual({ quiet: false });
  await Promise.all([app.close(), logged.close()]);
});

test('an encapsulated instance has the instances it is inside on its prototype chain (route-coverage.ts)', async () => {
  const app = Fastify();
  const seen: Record<string, FastifyInstance> = {};
  await app.register(async (outer) => {
    seen.outer = outer;
    await outer.register(async (inner) => void (seen.inner = inner));
  });
  await app.register(async (sibling) => void (seen.sibling = sibling));
  await app.register(fp(async (shared) => void (seen.shared = shared)));
  await app.ready();
  expect(enclosing(seen.inner!)).toEqual([seen.inner, seen.outer, app]);
  expect([withinScope(app, seen.inner!), withinScope(seen.outer!, seen.inner!), withinScope(seen.outer!, seen.sibling!)]).toEqual([
    true,
    true,
    false,
  ]);
  // fastify-plugin's skip-override: the plugin runs in its parent's instance itself.
  expect(seen.shared).toBe(app);
  await app.close();
});

test.each([
  [
    'edits error.message and sends the error',
    (error: Error & { statusCode?: number }, reply: { status(n: number): { send(b: unknown): unknown }; send(b: unknown): unknown }) => {
      error.message = 'Slow down, you are sending too many requests';
      void reply.send(error);
    },
    { statusCode: 429, error: 'Too Many Requests', message: 'Slow down, you are sending too many requests' },
  ],
  [
    'sends its own body, shaped as the default one',
    (error: Error & { statusCode?: number }, reply: { status(n: number): { send(b: unknown): unknown } }) => {
      void reply.status(429).send({ statusCode: 429, error: 'Too Many Requests', message: error.message });
    },
    { statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded' },
  ],
] as const)(
  "an app's setErrorHandler that %s decides the body: the configured object body is not put back over it",
  async (_name, handler, expected) => {
    const app = Fastify();
    await app.register(rateLimit, {
      redis: connect(),
      prefix: uniquePrefix('fyi'),
      algorithm: 'fixed-window',
      clock: () => Date.UTC(2026, 0, 1),
      limits: { limit: 1, window: '1m' },
      message: { error: 'slow_down' },
    });
    app.setErrorHandler((error, _req, reply) => handler(error as Error & { statusCode?: number }, reply as never));
    app.get('/', async () => ({ ok: true }));
    await app.ready();
    await request(app.server).get('/');
    const denied = await request(app.server).get('/');
    // Before: the plugin's onSend hook took the handler's payload for Fastify's rendering of the denial and
    // replaced it with the configured body, { error: 'slow_down' }.
    expect(denied.status).toBe(429);
    expect(denied.body).toEqual(expected);
    await app.close();
  },
);
