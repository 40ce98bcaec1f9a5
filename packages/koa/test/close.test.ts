import Koa from 'koa';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { rateLimit } from '@floodgate/koa';

/*
 * What rateLimit() returns carries its limiter and can be closed: building the same middleware again with
 * other rules (a test suite, a hot reload) needs the first one's name freed, and nothing else frees it.
 */
const redis = connect();
afterAll(closeClients);

test('close() frees the name of the limiter the middleware created, so it can be built again with other rules', async () => {
  const prefix = uniquePrefix('koaclose');
  const first = rateLimit({ redis, prefix, name: 'api', limits: { limit: 5, window: '1m' } });
  expect(() => rateLimit({ redis, prefix, name: 'api', limits: { limit: 9, window: '1m' } })).toThrow(/already used/);
  await first.close();
  const second = rateLimit({ redis, prefix, name: 'api', limits: { limit: 9, window: '1m' } });
  expect(second.limiter.rules.map((r) => r.limit)).toEqual([9]);
  await second.close();
});

test('a shared limiter passed in is not closed by the middleware', async () => {
  const prefix = uniquePrefix('koaclose');
  const shared = createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'shared', limits: { limit: 5, window: '1m' } });
  const mw = rateLimit({ limiter: shared });
  expect(mw.limiter).toBe(shared);
  await mw.close();
  expect(() => createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'shared', limits: { limit: 6, window: '1m' } })).toThrow(
    /already used/,
  );
  await shared.close();
});

test('middleware.limiter resets a client', async () => {
  const limit = rateLimit({ redis, prefix: uniquePrefix('koaclose'), limits: { limit: 1, window: '1m' } });
  const app = new Koa();
  app.use(limit).use((ctx) => {
    ctx.body = { ok: true };
  });
  const server = app.listen(0, '127.0.0.1');
  try {
    expect((await request(server).get('/')).status).toBe(200);
    expect((await request(server).get('/')).status).toBe(429);
    await limit.limiter.reset('ip:127.0.0.1');
    expect((await request(server).get('/')).status).toBe(200);
  } finally {
    server.close();
    await limit.close();
  }
});
