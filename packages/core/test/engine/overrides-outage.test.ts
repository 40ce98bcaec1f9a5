import { createLimiter, type Limiter } from '@floodgate/core';
import type { Redis } from 'ioredis';
import { closeClients, connect, eventually, freePort, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * A process started while Redis is unreachable (docs/overrides.md, "Where they live"): its first check's
 * read of the overrides fails, and the overrides must apply from the first check Redis answers, not from
 * the next refresh (a minute away here, so only the read at reconnection can give them). The limiter's own
 * redis-server is started after it, on a port picked before.
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
// Mid-minute, on the limiter's manual clock: no window boundary during the test.
const NOW = Date.UTC(2030, 0, 1, 12, 0, 30);

let server: RedisProcess | undefined;
const open: Limiter[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
  await server?.stop();
  server = undefined;
});

function limiterOn(redis: Redis, prefix: string): Limiter {
  const limiter = createLimiter({
    limits: { limit: 60, window: '1m' },
    overrides: { refreshMs: 60_000 },
    clock: () => NOW,
    redis,
    prefix,
    name: 'api',
    algorithm: 'fixed-window',
    failure: 'closed',
    timeoutMs: 1_000,
    logger: quiet,
  });
  open.push(limiter);
  return limiter;
}

test('started while Redis is unreachable: the checks after it answers apply the override at once (2 of 100, not 60)', async () => {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const prefix = uniquePrefix('ov-outage');
  const client = connect(url);
  const app = limiterOn(client, prefix);
  // Nothing listens: the first check's read of the overrides fails, and the check gets the policy's answer.
  const during = await app.check('user:1');
  expect([during.allowed, during.source]).toEqual([false, 'fallback']);

  server = await spawnRedis([], port);
  // An operator punishes user:1 from another process: 2 a minute.
  const operator = limiterOn(connect(url), prefix);
  await operator.overrides.set('user:1', { limits: { limit: 2, window: '1m' } });
  // The application's client reconnects on its own.
  expect(await eventually(() => Promise.resolve(client.status), 'ready', 10_000)).toBe('ready');

  let admitted = 0;
  for (let i = 0; i < 100; i++) if ((await app.check('user:1')).allowed) admitted++;
  expect(admitted).toBe(2);
  expect((await app.peek('user:2')).limit).toBe(60);
});

test('started while its Redis is frozen (accepts TCP, answers nothing): the same once it answers', async () => {
  server = await spawnRedis();
  const prefix = uniquePrefix('ov-outage');
  const operator = limiterOn(connect(server.url), prefix);
  await operator.overrides.set('user:1', { limits: { limit: 2, window: '1m' } });
  server.freeze();
  const client = connect(server.url);
  const app = limiterOn(client, prefix);
  const during = await app.check('user:1');
  expect([during.allowed, during.source]).toEqual([false, 'fallback']);
  server.thaw();
  expect(await eventually(() => Promise.resolve(client.status), 'ready', 10_000)).toBe('ready');

  let admitted = 0;
  for (let i = 0; i < 100; i++) if ((await app.check('user:1')).allowed) admitted++;
  expect(admitted).toBe(2);
});
