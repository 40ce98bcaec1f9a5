import request from 'supertest';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { start, type Running } from '../src/start';

let running: Running;
beforeAll(async () => {
  running = await start({ port: 0, redisUrl: testRedisUrl(), prefix: uniquePrefix('example'), verbose: false });
});
afterAll(() => running.close());

test('the example starts, admits /search 3 times per 10 s, then answers 429 with Retry-After', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await request(running.url).get('/search?q=x')).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  const denied = await request(running.url).get('/search');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  // The cheap route is still open: the search limit adds to the global one, it does not replace it.
  expect((await request(running.url).get('/')).status).toBe(200);
});

test('/login is limited per account, whatever the IP', async () => {
  const login = (username: string) => request(running.url).post('/login').send({ username });
  for (let i = 0; i < 5; i++) expect((await login('ada')).status).toBe(401);
  expect((await login('ADA')).status).toBe(429);
  expect((await login('grace')).status).toBe(401);
});
