import type { AddressInfo } from 'node:net';
import express from 'express';
import request from 'supertest';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { rateLimit } from '@floodgate/express';

/*
 * What rateLimit() returns carries its limiter and can be closed: building the same middleware again with
 * other rules (a test suite, a hot reload) needs the first one's name freed, and nothing else frees it.
 */
const redis = connect();
afterAll(closeClients);

test('close() frees the name of the limiter the middleware created, so it can be built again with other rules', async () => {
  const prefix = uniquePrefix('exclose');
  const first = rateLimit({ redis, prefix, name: 'api', limits: { limit: 5, window: '1m' } });
  expect(() => rateLimit({ redis, prefix, name: 'api', limits: { limit: 9, window: '1m' } })).toThrow(/already used/);
  await first.close();
  const second = rateLimit({ redis, prefix, name: 'api', limits: { limit: 9, window: '1m' } });
  expect(second.limiter.rules.map((r) => r.limit)).toEqual([9]);
  await second.close();
  await second.close(); // twice is harmless
});

test('a shared limiter passed in is not closed by the middleware', async () => {
  const prefix = uniquePrefix('exclose');
  const shared = createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'shared', limits: { limit: 5, window: '1m' } });
  const mw = rateLimit({ limiter: shared });
  expect(mw.limiter).toBe(shared);
  await mw.close();
  // Still registered: the name is still the shared limiter's.
  expect(() => createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'shared', limits: { limit: 6, window: '1m' } })).toThrow(
    /already used/,
  );
  await shared.close();
});

test('middleware.limiter resets a client (what express-rate-limit calls resetKey)', async () => {
  const limit = rateLimit({ redis, prefix: uniquePrefix('exclose'), limits: { limit: 1, window: '1m' } });
  const app = express();
  app.get('/', limit, (_req, res) => void res.json({ ok: true }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    expect((await request(url).get('/')).status).toBe(200);
    expect((await request(url).get('/')).status).toBe(429);
    await limit.limiter.reset('ip:127.0.0.1');
    expect((await request(url).get('/')).status).toBe(200);
  } finally {
    server.closeAllConnections();
    server.close();
    await limit.close();
  }
});
