import Fastify from 'fastify';
import request from 'supertest';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { concurrency } from '@floodgate/fastify';

/*
 * Fastify-only: where concurrency() applies. The plugin is fastify-plugin wrapped, so it limits the scope it
 * is registered in: the whole app at the root, or only a child plugin's routes. Two can be registered.
 */
afterAll(closeClients);
const redis = connect();

test('registered in a child scope, it limits only that scope; two can be registered', async () => {
  const app = Fastify();
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  // The handler has the request: both scopes' leases are granted.
  let reached: () => void = () => undefined;
  const inHandler = new Promise<void>((resolve) => (reached = resolve));
  const opts = { redis, prefix: uniquePrefix('ccf'), max: 1 };
  await app.register(async (scope) => {
    await scope.register(concurrency, { ...opts, name: 'exports' });
    await scope.register(concurrency, { ...opts, name: 'exports-all', identify: () => 'all' });
    scope.get('/export', async () => {
      reached();
      await held;
      return { ok: true };
    });
    scope.get('/export/quick', async () => ({ ok: true }));
  });
  app.get('/free', async () => ({ ok: true }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const slow = request(url)
      .get('/export')
      .then((r) => r.status);
    await inHandler;
    expect(await redis.zcard(`${opts.prefix}:exports-all:cc1:{all}`)).toBe(1);
    expect((await request(url).get('/export/quick')).status).toBe(429);
    expect((await request(url).get('/free')).status).toBe(200);
    release();
    expect(await slow).toBe(200);
  } finally {
    await app.close();
  }
});
