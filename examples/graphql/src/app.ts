import { createSchema, createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import { rateLimitDirective, useRateLimit } from '@floodgate/graphql';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
}

const typeDefs = /* GraphQL */ `
  ${rateLimitDirective}
  type Query {
    "3 searches a minute per client, however many aliases, fragments or batched operations carry them."
    search(term: String!): [Post!]! @rateLimit(limit: 3, window: "1m")
    "A list: its cost is its size (first), times what each post selects."
    posts(first: Int!): [Post!]!
  }
  type Post {
    id: ID!
    title: String!
    "Each author costs 2."
    author: Author! @rateLimit(cost: 2)
  }
  type Author {
    name: String!
  }
`;

const post = (i: number) => ({ id: String(i), title: `Post ${i}`, author: { name: `Author ${i % 7}` } });

/**
 * The example API: every operation counts against 60 operations and 2,000 cost points a minute per client
 * (the signed-in user, else the client address); Query.search is limited on its own; an operation
 * estimated above 5,000 is refused before it runs.
 */
export function createApp({ redis, prefix = 'floodgate-example' }: AppOptions = {}): YogaServerInstance<object, object> {
  return createYoga({
    schema: createSchema({
      typeDefs,
      resolvers: {
        Query: {
          search: (_: unknown, { term }: { term: string }) => [post(term.length)],
          posts: (_: unknown, { first }: { first: number }) => Array.from({ length: Math.min(first, 1000) }, (_, i) => post(i)),
        },
      },
    }),
    batching: { limit: 20 },
    plugins: [
      useRateLimit({
        redis,
        prefix,
        name: 'graphql',
        limits: [
          { limit: 60, window: '1m' },
          { limit: 2000, window: '1m', unit: 'cost' },
        ],
        maxCost: 5000,
      }),
    ],
  });
}
