import request from 'supertest';
import type Redis from 'ioredis';
import { connect, uniquePrefix } from '../clients';
import { spawnRedis, type RedisProcess } from '../processes';
import type { AdapterFactory } from '../conformance';
import { suiteResources } from './suite';
import { restDescribe, test } from '../suite-part';
import { deadlineFactory } from '../deadline';

/*
 * docs/security.md, "'open' admits no flood", over real sockets: with the default `failure: 'open'`, one
 * client's flood of requests runs the handler at most `limit` times while the app's Redis client is still
 * connecting (to a paused private redis-server: CLIENT PAUSE stops every client of a server), and Redis adds
 * nothing once it answers.
 */
export function openFloodAttacks(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  restDescribe(`${factory.name}: failure 'open' admits no flood`, () => {
    const suite = suiteResources(factory);
    let server: RedisProcess;
    beforeAll(async () => {
      server = await spawnRedis();
    });
    afterAll(() => server.stop());

    const ready = async (client: Redis): Promise<void> => {
      for (let i = 0; i < 100 && client.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 50));
      expect(client.status).toBe('ready');
    };

    test('400 concurrent requests while the Redis client connects to a paused Redis run the handler at most `limit` times', async () => {
      await connect(server.url).call('CLIENT', 'PAUSE', '1500', 'ALL');
      const redis = connect(server.url);
      const quiet = { warn: () => undefined };
      const app = await suite.start({
        global: { redis, prefix: uniquePrefix(factory.name), limits: { limit: 20, window: '1m' }, timeoutMs: 20, logger: quiet },
      });
      const agent = request.agent(app.url);
      const during = await Promise.all(Array.from({ length: 400 }, () => agent.get('/').then((r) => r.status)));
      // Before: every deadline of the flood admitted another round by the policy (84 to 154 handler runs).
      expect(app.hits()).toBeLessThanOrEqual(20);
      // 'open' is still open: requests it could not ask Redis about ran, up to the limit; the rest are 429 (or
      // 503 for one this process was too busy to ask about in time: overload, never admitted).
      expect(app.hits()).toBeGreaterThan(0);
      expect(during).toContain(429);
      expect(during.every((s) => s === 200 || s === 429 || s === 503)).toBe(true);
      await ready(redis);
      // Redis never counted them, and admits nothing more: the process counts them against what it has left.
      await Promise.all(Array.from({ length: 100 }, () => agent.get('/')));
      expect(app.hits()).toBeLessThanOrEqual(20);
    });
  });
}
