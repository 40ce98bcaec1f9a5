import { createServer } from 'node:http';
import { serveHttp, startExample, type Running } from '@floodgate/embedded-redis';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';
import { createApp } from '../src/app';

// The GraphQL example's app in this process, on the test Redis (src/server.ts is the program a user runs).
let running: Running;
beforeAll(async () => {
  running = await startExample(async (store, port) => serveHttp(createServer(createApp(store)).listen(port)), {
    port: 0,
    redisUrl: testRedisUrl(),
    prefix: uniquePrefix('example-graphql'),
  });
});
afterAll(() => running.close());

const ask = async (query: unknown) => {
  const res = await fetch(`${running.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(query),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as { errors?: { extensions?: { code?: string } }[] },
  };
};

test('search: 4 aliases are refused whole (nothing counted), then 3 in a batch run and a 4th is refused', async () => {
  const aliases = await ask({
    query: '{ a: search(term: "a") { id } b: search(term: "b") { id } c: search(term: "c") { id } d: search(term: "d") { id } }',
  });
  expect([aliases.status, aliases.body.errors?.[0]?.extensions?.code]).toEqual([429, 'RATE_LIMITED']);
  expect(Number(aliases.retryAfter)).toBeGreaterThanOrEqual(1);
  const batch = await ask(Array.from({ length: 4 }, (_, i) => ({ query: `{ search(term: "${i}") { id } }` })));
  expect((batch.body as unknown as { errors?: unknown }[]).map((b) => (b.errors ? 'denied' : 'ran'))).toEqual([
    'ran',
    'ran',
    'ran',
    'denied',
  ]);
});

test('an operation estimated above maxCost is refused before it runs; a listed one runs', async () => {
  const big = await ask({ query: '{ posts(first: 6000) { id } }' });
  expect([big.status, big.body.errors?.[0]?.extensions?.code]).toEqual([400, 'MAX_COST_EXCEEDED']);
  expect((await ask({ query: '{ posts(first: 100) { title author { name } } }' })).status).toBe(200);
});
