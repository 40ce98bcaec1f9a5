import request from 'supertest';
import type { Running, StartOptions } from '@floodgate/embedded-redis';
import { testRedisUrl, uniquePrefix } from './clients';

/** The smoke test every example passes: start it on the test Redis, spend a limit, expect a 429. */
export function exampleSmoke(framework: string, start: (options: StartOptions) => Promise<Running>): void {
  describe(`${framework} example`, () => {
    let running: Running;
    beforeAll(async () => {
      running = await start({ port: 0, redisUrl: testRedisUrl(), prefix: uniquePrefix(`example-${framework}`), verbose: false });
    });
    afterAll(() => running.close());

    test('starts, admits /search 3 times per 10 s, then answers 429 with Retry-After', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await request(running.url).get('/search?q=x')).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const denied = await request(running.url).get('/search');
      expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(denied.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
      // The cheap route is still open: the search limit adds to the global one, it does not replace it.
      const home = await request(running.url).get('/');
      expect(home.status).toBe(200);
      expect(home.body).toEqual({ hello: 'world', remaining: expect.any(Number) });
      expect(home.headers['ratelimit-policy']).toBe('"api-10s";q=20;w=10, "api-1h";q=500;w=3600');
    });

    test('/login is limited per account, whatever the IP', async () => {
      const login = (username: string) => request(running.url).post('/login').send({ username });
      for (let i = 0; i < 5; i++) expect((await login('ada')).status).toBe(401);
      const denied = await login('ADA');
      expect(denied.status).toBe(429);
      expect(denied.body.message).toBe('Too many login attempts for this account; try again later');
      expect((await login('grace')).status).toBe(401);
    });
  });
}
