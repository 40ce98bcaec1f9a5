import request from 'supertest';
import { createLimiter, type Limiter, type RedisClient } from '@floodgate/core';
import { closeClients, storeClient, uniquePrefix } from './clients';
import type { AdapterFactory, NeutralOptions, TestApp } from './conformance';
import { contract, test } from './suite-part';
import { deadlineFactory, TEST_DEADLINE } from './deadline';

/*
 * Limits that change without a deploy, identical in every adapter (docs/overrides.md): a rule's `limit` as
 * a function of the request, and a limiter's per-identifier overrides, with the rate-limit headers that
 * describe the rules each request was checked under.
 */
export function limitsConformance(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  describe(`${factory.name} conformance: request limits and overrides`, () => {
    let store: RedisClient;
    beforeAll(async () => {
      store = await storeClient();
    });
    const apps: TestApp[] = [];
    const limiters: Limiter[] = [];
    const start = async (global: NeutralOptions): Promise<TestApp> => {
      const app = await factory.makeApp({ global });
      apps.push(app);
      return app;
    };
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await Promise.all(limiters.splice(0).map((l) => l.close()));
    });
    afterAll(closeClients);

    const byKey = (req: { headers: Record<string, unknown> }): string => `key:${String(req.headers['x-key'])}`;
    const statuses = async (app: TestApp, n: number, headers: Record<string, string>): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await request(app.url).get('/').set(headers)).status);
      return out;
    };

    contract("limit(req): each request's limit, its headers describing it; async too", async () => {
      const app = await start({
        redis: store,
        prefix: uniquePrefix(`${factory.name}-rl`),
        identify: byKey,
        limits: [
          { limit: async (req) => (req.headers['x-tier'] === 'premium' ? 4 : 2), window: '1m' },
          { limit: 100, window: '1h' },
        ],
      });
      expect(await statuses(app, 3, { 'x-key': 'a' })).toEqual([200, 200, 429]);
      const premium = await request(app.url).get('/').set({ 'x-key': 'b', 'x-tier': 'premium' });
      expect(premium.status).toBe(200);
      expect(premium.headers['ratelimit-policy']).toBe('"1m";q=4;w=60, "1h";q=100;w=3600');
      expect(premium.headers.ratelimit).toMatch(/^"1m";r=3;t=\d+$/);
      expect(await statuses(app, 4, { 'x-key': 'b', 'x-tier': 'premium' })).toEqual([200, 200, 200, 429]);
      const free = await request(app.url).get('/').set({ 'x-key': 'c' });
      expect(free.headers['ratelimit-policy']).toBe('"1m";q=2;w=60, "1h";q=100;w=3600');
      expect(app.hits()).toBe(2 + 4 + 1);
    });

    test("limit(req) on a route's own limiter", async () => {
      const app = await factory.makeApp({
        routes: {
          '/search': {
            redis: store,
            prefix: uniquePrefix(`${factory.name}-rl`),
            identify: byKey,
            limits: { limit: (req) => (req.headers['x-tier'] === 'premium' ? 3 : 1), window: '1m' },
          },
        },
      });
      apps.push(app);
      const search = async (headers: Record<string, string>): Promise<number> =>
        (await request(app.url).get('/search').set(headers)).status;
      expect([await search({ 'x-key': 'a' }), await search({ 'x-key': 'a' })]).toEqual([200, 429]);
      const premium = { 'x-key': 'b', 'x-tier': 'premium' };
      expect([await search(premium), await search(premium), await search(premium), await search(premium)]).toEqual([200, 200, 200, 429]);
      // Other routes are not limited by it.
      expect((await request(app.url).get('/').set({ 'x-key': 'a' })).status).toBe(200);
    });

    test('limit(req) that throws or answers no positive integer: an error for the framework, the handler never reached', async () => {
      const app = await start({
        redis: store,
        prefix: uniquePrefix(`${factory.name}-rl`),
        limits: {
          limit: (req) => {
            const v = req.headers['x-limit'];
            if (v === 'throw') throw new Error('tier lookup failed');
            return (v === 'text' ? 'many' : Number(v)) as number;
          },
          window: '1m',
        },
      });
      for (const v of ['0', '-3', '1.5', 'text', 'throw']) expect((await request(app.url).get('/').set('x-limit', v)).status).toBe(500);
      expect((await request(app.url).get('/').set('x-limit', '3')).status).toBe(200);
      expect(app.hits()).toBe(1);
    });

    test('past 256 distinct limits per limiter: a new answer is checked at limit 1 (never an error, never more than an answer), known ones keep theirs', async () => {
      const app = await start({
        redis: store,
        prefix: uniquePrefix(`${factory.name}-rl`),
        identify: byKey,
        limits: { limit: (req) => Number(req.headers['x-limit']), window: '1h' },
        logger: { warn: () => undefined },
      });
      const statusesOf: number[] = [];
      for (let v = 1000; v < 1257; v++)
        statusesOf.push(
          (
            await request(app.url)
              .get('/')
              .set({ 'x-key': 'a', 'x-limit': String(v) })
          ).status,
        );
      expect(statusesOf.slice(0, 256).every((s) => s === 200)).toBe(true);
      // The 257th answer: the limiter's own rules, where the function's limit is 1; this client has 256 counted.
      expect(statusesOf[256]).toBe(429);
      expect((await request(app.url).get('/').set({ 'x-key': 'a', 'x-limit': '1000' })).status).toBe(200);
      expect(await statuses(app, 3, { 'x-key': 'b', 'x-limit': '5000' })).toEqual([200, 429, 429]);
    });

    test('a function limit inside named plans, or beside plan(req), fails at construction naming the option', async () => {
      const base = { redis: store, prefix: uniquePrefix(`${factory.name}-rl`) };
      await expect(
        factory.makeApp({ global: { ...base, limits: { free: { limit: () => 2, window: '1m' } } } as unknown as NeutralOptions }),
      ).rejects.toMatchObject({ option: 'limits' });
      await expect(
        factory.makeApp({ global: { ...base, limits: { limit: () => 2, window: '1m' }, plan: () => undefined } as NeutralOptions }),
      ).rejects.toMatchObject({ option: 'plan' });
    });

    test("an override set on the app's limiter: the next requests of that identifier, and their headers, use it", async () => {
      const limiter = createLimiter({
        ...TEST_DEADLINE,
        redis: store,
        prefix: uniquePrefix(`${factory.name}-ov`),
        limits: { limit: 2, window: '1m' },
        overrides: true,
      });
      limiters.push(limiter);
      const app = await start({ limiter, identify: byKey });
      await limiter.overrides.set('key:vip', { limits: { limit: 3, window: '1m' } });
      const first = await request(app.url).get('/').set('x-key', 'vip');
      expect(first.headers['ratelimit-policy']).toBe('"1m";q=3;w=60');
      expect(await statuses(app, 3, { 'x-key': 'vip' })).toEqual([200, 200, 429]);
      expect(await statuses(app, 3, { 'x-key': 'plain' })).toEqual([200, 200, 429]);
    });
  });
}
