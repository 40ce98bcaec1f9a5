import { APP_GUARD } from '@nestjs/core';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { FloodgateGuard, FloodgateModule, RateLimit, SkipRateLimit, type FloodgateModuleOptions } from '@floodgate/nestjs';
import { startApp } from './nest-app';

/*
 * GraphQL resolvers limited by FloodgateGuard, in a Nest app on the Fastify platform with Mercurius, over
 * real sockets and Redis: each field a guarded resolver resolves counts once, aliases and batched operations
 * included, so no query shape buys more than the limit; a refused field is a GraphQL error carrying the
 * denial (extensions: code, statusCode, retryAfter) beside the fields that were allowed.
 */
const redis = connect();
const closing = closeAfterEach();

type AnyDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => unknown;

/** A resolver of Query fields, each answering its name and counting its calls in `hits`. */
function resolver(fields: Record<string, AnyDecorator[]>, hits: Record<string, number>, classDecorators: AnyDecorator[] = []) {
  class SearchResolver {}
  const proto = SearchResolver.prototype as unknown as Record<string, unknown>;
  for (const [name, decorators] of Object.entries(fields)) {
    proto[name] = () => {
      hits[name] = (hits[name] ?? 0) + 1;
      return name;
    };
    const descriptor = Object.getOwnPropertyDescriptor(proto, name)!;
    for (const d of [Query(name) as AnyDecorator, ...decorators].reverse()) d(proto, name, descriptor);
  }
  for (const d of [...classDecorators].reverse()) d(SearchResolver);
  Resolver()(SearchResolver);
  return SearchResolver;
}

async function graphqlApp(
  options: Partial<FloodgateModuleOptions>,
  fields: Record<string, AnyDecorator[]>,
  hits: Record<string, number> = {},
) {
  const typeDefs = `type Query { ${Object.keys(fields)
    .map((f) => `${f}: String`)
    .join(' ')} }`;
  const { app, url } = await startApp('fastify', {
    imports: [
      FloodgateModule.forRoot({ redis, prefix: uniquePrefix('gql'), ...options } as FloodgateModuleOptions),
      // cache: false: Mercurius's query cache is loaded by a dynamic import, which Jest's module system refuses.
      GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, typeDefs, allowBatchedQueries: true, cache: false }),
    ],
    providers: [resolver(fields, hits), { provide: APP_GUARD, useClass: FloodgateGuard }],
  });
  closing(app);
  return async (body: object, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLAnswer & GraphQLAnswer[] };
  };
}
interface GraphQLAnswer {
  data: Record<string, string | null> | null;
  errors?: { message: string; path: string[]; extensions?: Record<string, unknown> }[];
}

test('a query over its limit is a GraphQL error with the denial (code, statusCode, retryAfter), and Retry-After on the response', async () => {
  const hits: Record<string, number> = {};
  const query = await graphqlApp({ limits: { limit: 2, window: '1m' } }, { search: [] }, hits);
  for (let i = 0; i < 2; i++) expect((await query({ query: '{ search }' })).body).toEqual({ data: { search: 'search' } });
  const denied = await query({ query: '{ search }' });
  expect(denied.status).toBe(200);
  expect(denied.body.data).toEqual({ search: null });
  expect(denied.body.errors).toEqual([
    {
      message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds$/),
      locations: expect.any(Array),
      path: ['search'],
      extensions: { code: 'TOO_MANY_REQUESTS', statusCode: 429, retryAfter: expect.any(Number) },
    },
  ]);
  expect(denied.body.errors![0]!.extensions!.retryAfter).toBeGreaterThanOrEqual(55);
  expect(Number(denied.headers.get('retry-after'))).toBe(denied.body.errors![0]!.extensions!.retryAfter);
  expect(denied.headers.get('ratelimit-policy')).toBe('"1m";q=2;w=60');
  expect(hits).toEqual({ search: 2 });
});

test('aliases cannot multiply the budget: each aliased field counts, those past the limit are refused', async () => {
  const hits: Record<string, number> = {};
  const query = await graphqlApp({ limits: { limit: 3, window: '1m' } }, { search: [] }, hits);
  const res = await query({ query: '{ a: search b: search c: search d: search e: search }' });
  const data = res.body.data!;
  expect(Object.values(data).filter((v) => v === 'search')).toHaveLength(3);
  expect(res.body.errors!.map((e) => e.extensions!.statusCode)).toEqual([429, 429]);
  // One item per limit on the response, however many fields ran it: the last field's.
  expect(res.headers.get('ratelimit')).toMatch(/^"1m";r=0;t=\d+$/);
  expect((await query({ query: '{ again: search }' })).body.data).toEqual({ again: null });
  expect(hits).toEqual({ search: 3 });
});

test('batched operations cannot multiply it either; the identity comes from the request of the GraphQL context', async () => {
  const hits: Record<string, number> = {};
  const query = await graphqlApp(
    { limits: { limit: 2, window: '1m' }, identify: (req) => `key:${String(req.headers['x-api-key'])}` },
    { search: [] },
    hits,
  );
  const batch = await query(
    [1, 2, 3].map(() => ({ query: '{ search }' })),
    { 'x-api-key': 'a' },
  );
  expect(batch.body.map((op) => op.data!.search)).toEqual(['search', 'search', null]);
  // Another key: a budget of its own.
  expect((await query({ query: '{ search }' }, { 'x-api-key': 'b' })).body.data).toEqual({ search: 'search' });
  expect(hits).toEqual({ search: 3 });
});

test('@RateLimit and @SkipRateLimit on resolver fields, by name; a query spends each field its own limits', async () => {
  const hits: Record<string, number> = {};
  const query = await graphqlApp(
    { limits: { limit: 10, window: '1m' } },
    {
      expensive: [RateLimit({ name: 'expensive', limits: { limit: 1, window: '1m' } })],
      health: [SkipRateLimit('default')],
      cheap: [],
    },
    hits,
  );
  const res = await query({ query: '{ expensive cheap other: expensive health }' });
  expect(res.body.data).toEqual({ expensive: 'expensive', cheap: 'cheap', other: null, health: 'health' });
  expect(res.body.errors!.map((e) => e.path)).toEqual([['other']]);
  expect(res.headers.get('ratelimit-policy')).toBe('"1m";q=10;w=60, "expensive-1m";q=1;w=60');
  for (let i = 0; i < 12; i++) await query({ query: '{ health }' });
  expect(hits.health).toBe(13);
});
