import { connect as netConnect, type Socket } from 'node:net';
import type Redis from 'ioredis';
import request from 'supertest';
import { settled } from '@floodgate/core/testing';
import { connect, uniquePrefix } from './clients';
import { startRedis } from './redis-server';
import type { AdapterFactory, AppSpec, NeutralConcurrencyOptions, TestApp } from './conformance';
import { gate } from './held';
import { contract, test } from './suite-part';
import { TEST_DEADLINE } from './deadline';

/*
 * `concurrency(...)` (docs/concurrency.md) through each adapter, over real sockets: the same cases for
 * every adapter and framework major, run inside conformance(). `GET /slow` waits on a gate the test opens,
 * so requests are really in flight; what Redis holds afterwards is read back once settled() says every
 * release has answered, so a leaked slot fails.
 */

/** A raw GET over its own socket, left open (no response read); `reset()` sends an RST. */
function rawGet(url: string, path: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = netConnect({ host: hostname, port: Number(port) });
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
      resolve(socket);
    });
  });
}

export function concurrencyConformance({
  factory,
  redis,
  start,
}: {
  factory: AdapterFactory;
  redis: Redis;
  start: (spec: AppSpec) => Promise<TestApp>;
}): void {
  describe('concurrency()', () => {
    const options = (extra: Partial<NeutralConcurrencyOptions> = {}): NeutralConcurrencyOptions => ({
      ...TEST_DEADLINE,
      redis,
      prefix: uniquePrefix(`cc${factory.name}`),
      max: 2,
      ...extra,
    });
    const slotsOf = (o: NeutralConcurrencyOptions, id = 'ip:127.0.0.1'): Promise<number> =>
      redis.zcard(`${o.prefix}:${o.name ?? 'default'}:cc1:{${id}}`);

    contract('at most max in flight: the next gets 429, Retry-After 1 and a JSON body; a finished response frees its slot', async () => {
      const g = gate();
      const concurrency = options({ max: 2 });
      const app = await start({ concurrency, slow: g.slow });
      const inFlight = [request(app.url).get('/slow'), request(app.url).get('/slow')].map((r) => r.then((res) => res.status));
      await g.reached(2);
      expect(await slotsOf(concurrency)).toBe(2);
      const denied = await request(app.url).get('/');
      expect(denied.status).toBe(429);
      expect(denied.headers['retry-after']).toBe('1');
      expect(Object.keys(denied.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
      expect(denied.body).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        message: 'Too many requests in progress, retry in 1 second',
      });
      expect(app.hits()).toBe(2);
      g.open();
      expect(await Promise.all(inFlight)).toEqual([200, 200]);
      await settled();
      expect(await slotsOf(concurrency)).toBe(0);
      expect((await request(app.url).get('/')).status).toBe(200);
      expect((await request(app.url).get('/')).status).toBe(200);
      await settled();
      expect(await redis.exists(`${concurrency.prefix}:default:cc1:{ip:127.0.0.1}`)).toBe(0);
    });

    contract('clients that reset their connections mid-request leak no slot', async () => {
      const g = gate();
      const concurrency = options({ max: 3 });
      const app = await start({ concurrency, slow: g.slow });
      const sockets = await Promise.all([1, 2, 3].map(() => rawGet(app.url, '/slow')));
      await g.reached(3);
      expect(await slotsOf(concurrency)).toBe(3);
      for (const s of sockets) s.resetAndDestroy();
      // settled(): the server has seen the resets, and each lease's release has answered.
      await settled();
      expect(await slotsOf(concurrency)).toBe(0);
      const fresh = [1, 2, 3].map(() =>
        request(app.url)
          .get('/slow')
          .then((r) => r.status),
      );
      await g.reached(6);
      expect((await request(app.url).get('/')).status).toBe(429);
      g.open();
      expect(await Promise.all(fresh)).toEqual([200, 200, 200]);
      await settled();
      expect(await slotsOf(concurrency)).toBe(0);
    });

    test('a client that leaves before its lease is granted frees it at once, and reaches no handler', async () => {
      // identify() waits for the test: the clients below are gone before their leases are granted.
      const identifying = gate();
      let holding = true;
      const concurrency = options({
        max: 5,
        identify: async (_req, ids) => {
          if (holding) await identifying.slow();
          return ids;
        },
      });
      const app = await start({ concurrency });
      const sockets = await Promise.all([1, 2, 3, 4, 5].map(() => rawGet(app.url, '/slow')));
      await identifying.reached(5);
      for (const s of sockets) s.resetAndDestroy();
      // settled(): the server has seen every client leave (a response is watched from its lease's request on).
      await settled();
      holding = false;
      identifying.open();
      // settled() again: the leases granted since have been released.
      await settled();
      expect(await slotsOf(concurrency)).toBe(0);
      expect(app.hits()).toBe(0);
      expect((await request(app.url).get('/')).status).toBe(200);
    });

    test('identify() gives each key its own slots; statusCode, message and skip are honoured', async () => {
      const g = gate();
      const concurrency = options({
        max: 1,
        identify: (req) => `key:${String(req.headers['x-key'])}`,
        statusCode: 503,
        message: { code: 'E_BUSY' },
        skip: (req) => req.headers['x-skip'] === '1',
      });
      const app = await start({ concurrency, slow: g.slow });
      const held = request(app.url).get('/slow').set('x-key', 'a');
      const heldStatus = held.then((r) => r.status);
      await g.reached(1);
      const denied = await request(app.url).get('/').set('x-key', 'a');
      expect([denied.status, denied.body, denied.headers['retry-after']]).toEqual([503, { code: 'E_BUSY' }, '1']);
      expect((await request(app.url).get('/').set('x-key', 'b')).status).toBe(200);
      expect((await request(app.url).get('/').set({ 'x-key': 'a', 'x-skip': '1' })).status).toBe(200);
      g.open();
      expect(await heldStatus).toBe(200);
    });

    test("Redis down: failure 'closed' answers 503 with Retry-After, 'open' lets through, both within the deadline", async () => {
      const server = await startRedis();
      const down = connect(server.url);
      const quiet = { warn: () => undefined };
      const closed = await start({ concurrency: options({ redis: down, failure: 'closed', timeoutMs: 100, logger: quiet }) });
      const open = await start({ concurrency: options({ redis: down, failure: 'open', timeoutMs: 100, logger: quiet }) });
      expect((await request(closed.url).get('/')).status).toBe(200);
      await server.stop();
      const t0 = Date.now();
      const refused = await request(closed.url).get('/');
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(refused.status).toBe(503);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(refused.body)).not.toMatch(/ECONN|redis|connection|closed/i);
      expect((await request(open.url).get('/')).status).toBe(200);
      down.disconnect();
    });

    test('bad options fail at construction with a ConfigError naming the option', async () => {
      for (const [bad, option] of [
        [{ max: 0 }, 'max'],
        [{ max: 2.5 }, 'max'],
        [{ leaseMs: -1 }, 'leaseMs'],
        [{ leaseMs: '2d' }, 'leaseMs'],
        [{ statusCode: 200 }, 'statusCode'],
        [{ headers: 'draft-8' }, 'headers'],
      ] as const) {
        await expect(factory.makeApp({ concurrency: options(bad as Partial<NeutralConcurrencyOptions>) })).rejects.toMatchObject({
          code: 'ERR_FLOODGATE_CONFIG',
          option,
        });
      }
    });
  });
}
