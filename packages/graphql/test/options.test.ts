import { ConfigError } from '@floodgate/core';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { useRateLimit, type GraphqlRateLimitOptions } from '@floodgate/graphql';
import { post, type Calls } from './schema';
import { serveYoga } from './serve';

/* Options refused at construction (or when the server hands over its schema), and identity over a real Yoga. */

const redis = connect();
const closing = closeAfterEach();

test.each([
  [{ refunds: false }, 'refunds'],
  [{ lists: 1 }, 'lists'],
  [{ maxCost: 0 }, 'maxCost'],
  [{ identity: 'email' }, 'identity'],
  [{ limits: { limit: 1, window: '1m', unit: 'tokens' } }, 'limits[0].unit'],
  [{ limits: { limit: 1, window: '1m', for: 'user' } }, 'limits[0].for'],
  [{ fields: { 'Query.search': { limits: { limit: 1, window: '1m', unit: 'x' } } } }, "fields['Query.search'].limits[0].unit"],
  [{ fields: { 'not a coordinate': {} } }, "fields['not a coordinate']"],
  [{ directive: '@rateLimit' }, 'directive'],
])('%j is a ConfigError naming %s', (options, option) => {
  let thrown: unknown;
  try {
    useRateLimit({ redis, ...(options as GraphqlRateLimitOptions) });
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  expect((thrown as ConfigError).option).toBe(option);
});

test('a coordinate the schema lacks, or limits past 32 rules, fail when the server is made', async () => {
  const calls: Calls = {};
  await expect(
    serveYoga([useRateLimit({ redis, fields: { 'Query.serch': { limits: { limit: 1, window: '1m' } } } })], calls),
  ).rejects.toThrow(/Query.serch|names no field/);
  const many = Array.from({ length: 33 }, () => ({ limit: 1, window: '1m' }));
  await expect(serveYoga([useRateLimit({ redis, fields: { 'Query.posts': { limits: many } } })], calls)).rejects.toThrow(/at most 32/);
});

test('the client address is the socket peer: X-Forwarded-For never buys a fresh budget; a signed-in user has their own', async () => {
  const calls: Calls = {};
  const plugin = closing(
    useRateLimit<{ request: Request; req: unknown }>({
      redis,
      prefix: uniquePrefix('gql'),
      limits: { limit: 2, window: '1m' },
      user: (ctx) => ctx.request.headers.get('x-user') ?? undefined,
    }),
  );
  const { url } = closing(await serveYoga([plugin], calls));
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await post(url, { query: '{ me { id } }' }, { 'x-forwarded-for': `203.0.113.${i}` })).status);
  expect(statuses).toEqual([200, 200, 429, 429]);
  expect((await post(url, { query: '{ me { id } }' }, { 'x-user': 'alice' })).status).toBe(200);
  const peek = await plugin.limiter!.peek(['-op:ip:127.0.0.1', '-op:user:alice'], { cost: 0 });
  expect(peek.states.map((s) => [s.identifier, s.remaining])).toEqual([
    ['-op:ip:127.0.0.1', 0],
    ['-op:user:alice', 1],
  ]);
});

test("a schema whose only limit is the directive on one field: its limiter holds that field's rules alone, and other operations run", async () => {
  const calls: Calls = {};
  const plugin = closing(useRateLimit({ redis, prefix: uniquePrefix('gql') }));
  const { url } = closing(await serveYoga([plugin], calls));
  const res = await post(url, { query: '{ posts(first: 3) { id } }' });
  expect([res.status, calls['Query.posts']]).toEqual([200, 1]);
  // Its only limit is search's (the directive): the operation never reached the limiter.
  expect(plugin.limiter!.rules.map((r) => r.for)).toEqual(['Query-search']);
});

test('a document sent again with other variables is estimated again: its list sizes are the variables', async () => {
  const calls: Calls = {};
  const plugin = closing(useRateLimit({ redis, prefix: uniquePrefix('gql'), maxCost: 100 }));
  const { url } = closing(await serveYoga([plugin], calls));
  const query = 'query ($n: Int) { posts(first: $n) { id } }';
  expect((await post(url, { query, variables: { n: 50 } })).status).toBe(200);
  const big = await post(url, { query, variables: { n: 500 } });
  expect([big.status, big.body.errors?.[0]?.extensions?.['cost']]).toEqual([400, 500]);
  expect((await post(url, { query, variables: { n: 50 } })).status).toBe(200);
  expect(calls['Query.posts']).toBe(2);
});
