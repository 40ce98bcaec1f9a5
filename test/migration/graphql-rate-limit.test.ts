import { createServer } from 'node:http';
import { createSchema, createYoga, type Plugin, type YogaServerOptions } from 'graphql-yoga';
import { useMaskedErrors } from '@envelop/core';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import request from 'supertest';
import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, serveHttp, uniquePrefix } from '@floodgate/testing';
import { apolloRateLimit, rateLimitDirective, useRateLimit, type GraphqlRateLimitOptions } from '@floodgate/graphql';

/*
 * docs/migrating/graphql-rate-limit.md, checked: graphql-rate-limit's and @envelop/rate-limiter's examples as
 * the guide rewrites them, and the rows of both tables, against real GraphQL Yoga servers (over sockets) and
 * the test Redis, asserting what the old libraries documented and what the guide says differs.
 */
const redis = connect();
const closed = closeAfterEach();

// The guide's schema: `search` limited by the directive; lists with a size argument; a page holds at most 100.
const typeDefs = /* GraphQL */ `
  type Query {
    search(term: String): [Post!]! @rateLimit(limit: 5, window: "1m")
    posts(first: Int): [Post!]!
    me: User
  }
  type Post {
    id: ID!
    author: User!
    comments(first: Int): [Post!]!
  }
  type User {
    id: ID!
    name: String
  }
`;
let calls: Record<string, number> = {};
beforeEach(() => (calls = {}));
const hit = (name: string): void => void (calls[name] = (calls[name] ?? 0) + 1);
const page = (n: number) => Array.from({ length: Math.min(n, 100) }, (_, i) => ({ id: String(i) }));
const resolvers = {
  Query: {
    search: () => (hit('search'), page(1)),
    posts: (_: unknown, { first }: { first?: number }) => (hit('posts'), page(first ?? 10)),
    me: () => ({ id: 'me', name: 'Me' }),
  },
  Post: {
    author: (p: { id: string }) => (hit('author'), { id: `a${p.id}` }),
    comments: (_: unknown, { first }: { first?: number }) => page(first ?? 3),
  },
};

/** A plugin closed after the test, on a prefix of its own. */
const pluginOf = <C = Record<string, unknown>>(options: Omit<GraphqlRateLimitOptions<C>, 'redis'> = {}) =>
  closed(useRateLimit<C>({ redis, prefix: uniquePrefix('gqlrl'), ...options }));
/** A real Yoga on 127.0.0.1 (the signed-in user, as an auth step would leave it, from the x-session header); its URL. */
async function yogaOf(plugins: unknown[], defs = typeDefs, extra: Partial<YogaServerOptions<object, object>> = {}): Promise<string> {
  const yoga = createYoga({
    schema: createSchema({ typeDefs: [rateLimitDirective, defs], resolvers }),
    plugins: plugins as Plugin[],
    context: ({ request: req }) => ({ user: req.headers.get('x-session') ? { id: req.headers.get('x-session') } : undefined }),
    logging: false,
    ...extra,
  });
  return closed(await serveHttp(createServer(yoga).listen(0, '127.0.0.1'))).url;
}
const gql = (url: string, query: string, headers: Record<string, string> = {}) =>
  request(url).post('/graphql').set(headers).send({ query });
const statuses = async (url: string, query: string, n: number, headers: Record<string, string> = {}): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push((await gql(url, query, headers)).status);
    await settled(); // each operation settled before the next is sent
  }
  return out;
};
const SEARCH = '{ search { id } }';

test('graphql-rate-limit, after: @rateLimit(limit: 5, window: "1m"), per signed-in user, else the client address', async () => {
  const url = await yogaOf([pluginOf()]);
  expect(await statuses(url, SEARCH, 5)).toEqual([200, 200, 200, 200, 200]);
  const denied = await gql(url, SEARCH);
  expect(denied.status).toBe(429);
  const retryAfter = Number(denied.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  // message/formatError -> one error, code RATE_LIMITED with retryAfter; `http` stays out of the body; no partial data.
  expect(denied.body.data).toBeUndefined();
  expect(denied.body.errors).toEqual([
    {
      message: `Rate limit exceeded (Query.search): retry after ${retryAfter} s.`,
      extensions: { code: 'RATE_LIMITED', retryAfter, coordinates: ['Query.search'] },
    },
  ]);
  expect(calls.search).toBe(5);
  // X-Forwarded-For buys no new budget (the address is the socket's); a signed-in user has their own.
  expect((await gql(url, SEARCH, { 'x-forwarded-for': '203.0.113.9' })).status).toBe(429);
  expect(await statuses(url, SEARCH, 6, { 'x-session': 'alice' })).toEqual([200, 200, 200, 200, 200, 429]);
});

test("message/formatError -> Apollo's formatError; on Yoga, useMaskedErrors before useRateLimit (Yoga's own maskedErrors never sees a denial)", async () => {
  const slowDown = <E extends GraphQLError | GraphQLFormattedError>(e: E) =>
    e.extensions?.['code'] === 'RATE_LIMITED' ? new GraphQLError('Slow down', { extensions: e.extensions }) : e;
  const denial = async (url: string, path = '/graphql') => {
    for (let i = 0; i < 5; i++) expect((await request(url).post(path).send({ query: SEARCH })).status).toBe(200);
    const denied = await request(url).post(path).send({ query: SEARCH });
    return [denied.status, denied.body.errors[0].message, denied.body.errors[0].extensions.code];
  };
  const yogaMasked = await yogaOf([pluginOf()], typeDefs, { maskedErrors: { maskError: (e) => slowDown(e as GraphQLError) } });
  expect(await denial(yogaMasked)).toEqual([429, expect.stringMatching(/^Rate limit exceeded/), 'RATE_LIMITED']);
  const first = await yogaOf([useMaskedErrors({ maskError: (e) => slowDown(e as GraphQLError) }), pluginOf()]);
  expect(await denial(first)).toEqual([429, 'Slow down', 'RATE_LIMITED']);
  const apollo = new ApolloServer({
    typeDefs: [rateLimitDirective, typeDefs],
    resolvers,
    plugins: [closed(apolloRateLimit({ redis, prefix: uniquePrefix('gqlrl') }))],
    formatError: (formatted) => ({ ...formatted, message: slowDown(formatted).message }),
  });
  const { url } = await startStandaloneServer(apollo, { listen: { port: 0, host: '127.0.0.1' }, context: async ({ req }) => ({ req }) });
  closed({ close: () => apollo.stop() });
  expect(await denial(url, '/')).toEqual([429, 'Slow down', 'RATE_LIMITED']);
});

test('@rateLimit(max: 5, window: "60s") is refused; the directive is repeatable: one use per rule', async () => {
  expect(() => createSchema({ typeDefs: [rateLimitDirective, 'type Query { a: Int @rateLimit(max: 5, window: "60s") }'] })).toThrow(
    /Unknown argument "max"/,
  );
  const plugin = pluginOf();
  const url = await yogaOf(
    [plugin],
    typeDefs.replace('@rateLimit(limit: 5, window: "1m")', '@rateLimit(limit: 2, window: "10s") @rateLimit(limit: 5, window: "1m")'),
  );
  expect(await statuses(url, SEARCH, 3)).toEqual([200, 200, 429]);
  expect(plugin.limiter!.rules.map((r) => [r.limit, r.windowMs])).toEqual([
    [2, 10_000],
    [5, 60_000],
  ]);
});

test('identityArgs -> fields[...].identity: a budget per API key from the context, shared by every argument value', async () => {
  const url = await yogaOf([
    pluginOf<{ request: Request }>({
      fields: {
        'Query.search': { limits: { limit: 2, window: '1m' }, identity: (ctx) => ctx.request.headers.get('x-api-key') ?? undefined },
      },
    }),
  ]);
  const key = { 'x-api-key': 'k1' };
  expect((await gql(url, '{ search(term: "a") { id } }', key)).status).toBe(200);
  expect((await gql(url, '{ search(term: "b") { id } }', key)).status).toBe(200);
  expect((await gql(url, '{ search(term: "c") { id } }', key)).status).toBe(429);
  expect(await statuses(url, SEARCH, 3, { 'x-api-key': 'k2' })).toEqual([200, 200, 429]);
  // An entry replaces the directive on its coordinate: an identity alone leaves search with no limit at all.
  const bare = await yogaOf([pluginOf({ fields: { 'Query.search': { identity: 'ip' } } })]);
  expect(await statuses(bare, SEARCH, 6)).toEqual([200, 200, 200, 200, 200, 200]);
});

test('arrayLengthField -> list sizes from first/last/limit, multiplied through nested lists', async () => {
  const url = await yogaOf([pluginOf({ fields: { 'Post.author': { limits: { limit: 10, window: '1m' } } } })]);
  // 2 posts x 3 comments: 6 author selections.
  expect((await gql(url, '{ posts(first: 2) { comments(first: 3) { author { id } } } }')).status).toBe(200);
  await settled();
  const over = await gql(url, '{ posts(first: 5) { author { id } } }');
  expect([over.status, over.body.errors[0].extensions.coordinates]).toEqual([429, ['Post.author']]);
  expect(await statuses(url, '{ posts(first: 4) { author { id } } }', 2)).toEqual([200, 429]);
  expect(calls.author).toBe(10);
});

test('a type limit is one budget for all its fields (graphql-rate-limit limited each field on its own)', async () => {
  const url = await yogaOf([pluginOf()], typeDefs.replace('type User {', 'type User @rateLimit(limit: 3, window: "1m") {'));
  // id and name: 2 of the 3; the next { id name } would be 4, and is denied whole; { id } alone is the third.
  expect(await statuses(url, '{ me { id name } }', 2)).toEqual([200, 429]);
  expect(await statuses(url, '{ me { id } }', 2)).toEqual([200, 429]);
});

test('RedisStore let racing clients pass together; one script call each: 10 at once against 5, exactly 5 run', async () => {
  const url = await yogaOf([pluginOf()]);
  const results = await Promise.all(Array.from({ length: 10 }, () => gql(url, SEARCH)));
  expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
  expect(calls.search).toBe(5);
});

test('@envelop/rate-limiter, after: identifyFn -> identity; undefined falls back to the user, else the address', async () => {
  const url = await yogaOf([pluginOf<{ request: Request }>({ identity: (ctx) => ctx.request.headers.get('x-user') ?? undefined })]);
  expect(await statuses(url, SEARCH, 6, { 'x-user': 'alice' })).toEqual([200, 200, 200, 200, 200, 429]);
  expect(await statuses(url, SEARCH, 2, { 'x-user': 'bob' })).toEqual([200, 200]);
  // No x-user: the signed-in user's budget, else the client address's.
  expect(await statuses(url, SEARCH, 6, { 'x-session': 'carol' })).toEqual([200, 200, 200, 200, 200, 429]);
  expect(await statuses(url, SEARCH, 6)).toEqual([200, 200, 200, 200, 200, 429]);
});

test('checked before execution: 6 aliases (and fragments) against 5 are denied whole, count nothing, and no field runs', async () => {
  const url = await yogaOf([pluginOf()]);
  const aliases = Array.from({ length: 4 }, (_, i) => `s${i}: search { id }`).join(' ');
  const six = `{ ${aliases} ...A ...B } fragment A on Query { a: search { id } } fragment B on Query { b: search { id } }`;
  const denied = await gql(url, six);
  expect([denied.status, denied.body.data, calls.search]).toEqual([429, undefined, undefined]);
  // Nothing was counted: 5 aliases (one through a fragment) fit, then the budget is spent.
  const five = `{ ${aliases} ...A } fragment A on Query { a: search { id } }`;
  expect(await statuses(url, five, 2)).toEqual([200, 429]);
  expect(calls.search).toBe(5);
});

test('rateLimitDirectiveName -> directive', async () => {
  const defs = typeDefs.replace('@rateLimit(', '@limit(');
  const url = await yogaOf(
    [pluginOf({ directive: 'limit' })],
    `${rateLimitDirective.replace('directive @rateLimit', 'directive @limit')}\n${defs}`,
  );
  expect(await statuses(url, SEARCH, 6)).toEqual([200, 200, 200, 200, 200, 429]);
});

test('query cost: maxCost refuses before running; a cost budget is reserved at the estimate and settled at the actual cost', async () => {
  const url = await yogaOf([pluginOf({ limits: [{ limit: 1000, window: '1m', unit: 'cost' }], maxCost: 1000 })]);
  const costly = await gql(url, '{ posts(first: 1001) { id } }');
  expect([costly.status, costly.body.errors[0].extensions]).toEqual([400, { code: 'MAX_COST_EXCEEDED', cost: 1001, maxCost: 1000 }]);
  expect(calls.posts).toBeUndefined();
  // Estimated 1,000 and 900; each page held 100, so each settled at 100.
  expect(await statuses(url, '{ posts(first: 1000) { id } }', 1)).toEqual([200]);
  expect(await statuses(url, '{ posts(first: 900) { id } }', 1)).toEqual([200]);
  const over = await gql(url, '{ posts(first: 801) { id } }');
  expect([over.status, over.body.errors[0].extensions.coordinates]).toEqual([429, ['cost']]);
  expect(await statuses(url, '{ posts(first: 800) { id } }', 1)).toEqual([200]);
});
