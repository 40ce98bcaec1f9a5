import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { createLimiter, resetWarnings, type Decision } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { rateLimit } from '@floodgate/express';

const redis = connect();
const servers: ReturnType<express.Express['listen']>[] = [];
afterEach(() => servers.splice(0).forEach((s) => { s.closeAllConnections(); s.close(); }));
afterAll(closeClients);

async function serve(app: express.Express): Promise<string> {
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function appWith(...mw: RequestHandler[]): express.Express {
  const app = express();
  app.get('/', ...mw, (req, res) => {
    res.json({ remaining: req.rateLimit?.remaining ?? null });
  });
  return app;
}

test('req.rateLimit carries the decision to handlers', async () => {
  const url = await serve(appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 5, window: '1m' } })));
  expect((await request(url).get('/')).body).toEqual({ remaining: 4 });
  expect((await request(url).get('/')).body).toEqual({ remaining: 3 });
});

test('handler replaces the denial response, after Retry-After is set', async () => {
  const seen: Decision[] = [];
  const limit = rateLimit({
    redis, prefix: uniquePrefix('ex'), limits: { limit: 1, window: '1m' },
    handler: (_req, res, _next, decision) => {
      seen.push(decision);
      res.status(418).send('teapot');
    },
  });
  const url = await serve(appWith(limit));
  await request(url).get('/');
  const denied = await request(url).get('/');
  expect(denied.status).toBe(418);
  expect(denied.text).toBe('teapot');
  expect(denied.headers['retry-after']).toMatch(/^\d+$/);
  expect(seen).toHaveLength(1);
  expect(seen[0]).toMatchObject({ allowed: false, reason: 'limit' });
});

test('limiter: a shared limiter counts across middlewares, and core options beside it are an error', async () => {
  const limiter = createLimiter({ redis, prefix: uniquePrefix('ex'), limits: { limit: 2, window: '1m' } });
  const a = await serve(appWith(rateLimit({ limiter })));
  const b = await serve(appWith(rateLimit({ limiter, headers: 'legacy' })));
  expect((await request(a).get('/')).status).toBe(200);
  expect((await request(b).get('/')).status).toBe(200);
  expect((await request(a).get('/')).status).toBe(429);
  expect(() => rateLimit({ limiter, limits: { limit: 1, window: '1s' } })).toThrow(expect.objectContaining({ option: 'limits' }));
});

test('options used by peers are explained; bad handler is a ConfigError', () => {
  expect(() => rateLimit({ limits: { limit: 1, window: '1s' }, keyGenerator: () => 'x' } as never)).toThrow(/keyGenerator.*identify\(req, defaults\)/);
  expect(() => rateLimit({ limits: { limit: 1, window: '1s' }, max: 5 } as never)).toThrow(/`max` is not a Floodgate option/);
  expect(() => rateLimit({ limits: { limit: 1, window: '1s' }, handler: 'x' as never })).toThrow(expect.objectContaining({ option: 'handler' }));
});

test("trust proxy true is warned about once per process; the warning can be turned off", async () => {
  resetWarnings();
  const warnings: string[] = [];
  const logger = { warn: (m: string) => warnings.push(m) };
  const quiet = appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 9, window: '1m' }, logger, warnings: { 'trust-proxy-all': false } }));
  quiet.set('trust proxy', true);
  const quietUrl = await serve(quiet);
  await request(quietUrl).get('/');
  expect(warnings).toEqual([]);
  const loud = appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 9, window: '1m' }, logger }));
  loud.set('trust proxy', true);
  const url = await serve(loud);
  await request(url).get('/');
  await request(url).get('/');
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(/\[trust-proxy-all\].*'trust proxy' is true/);
});

test('an error thrown by identify() reaches the Express error handler, not the client as a 429', async () => {
  const app = appWith(rateLimit({ redis, prefix: uniquePrefix('ex'), limits: { limit: 9, window: '1m' }, identify: () => { throw new Error('boom'); } }));
  app.use(((err, _req, res, _next) => { res.status(500).json({ caught: (err as Error).message }); }) as express.ErrorRequestHandler);
  const url = await serve(app);
  expect((await request(url).get('/')).body).toEqual({ caught: 'boom' });
});
