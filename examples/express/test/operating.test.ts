import request from 'supertest';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';
import type { Running } from '@floodgate/embedded-redis';
import { start } from './start';

/* The example's /metrics (Prometheus, @floodgate/metrics) and /health (limiter.health()) on the test Redis. */
let running: Running;
beforeAll(async () => {
  running = await start({ port: 0, redisUrl: testRedisUrl(), prefix: uniquePrefix('example-ops'), verbose: false });
});
afterAll(() => running.close());

test('/metrics counts the decisions of every limiter, and is never rate limited itself', async () => {
  for (let i = 0; i < 4; i++) await request(running.url).get('/search?q=x');
  for (let i = 0; i < 30; i++) expect((await request(running.url).get('/metrics')).status).toBe(200);
  const res = await request(running.url).get('/metrics');
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  expect(res.text).toMatch(/floodgate_decisions_total\{limiter="search",outcome="allowed",source="redis"\} 3/);
  expect(res.text).toMatch(/floodgate_decisions_total\{limiter="search",outcome="denied",source="redis"\} 1/);
  expect(res.text).toMatch(/floodgate_store_duration_seconds_count\{limiter="api"\} [1-9]/);
  expect(res.text).toContain('floodgate_store_status{limiter="login"} 0');
});

test('/health answers 200 with every limiter ok', async () => {
  const res = await request(running.url).get('/health');
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('ok');
  expect(res.body.limiters.map((l: { limiter: string }) => l.limiter).sort()).toEqual(['api', 'login', 'search']);
});
