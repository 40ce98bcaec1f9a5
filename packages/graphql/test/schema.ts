import { rateLimitDirective } from '@floodgate/graphql';

/** The test schema: a limited search, lists with size arguments, a resolver that returns more than asked. */
export const typeDefs = /* GraphQL */ `
  ${rateLimitDirective}
  type Query {
    search(term: String): [Post!]! @rateLimit(limit: 5, window: "1m")
    posts(first: Int): [Post!]!
    liar(first: Int): [Post!]!
    me: User
    boom: String!
  }
  type Post {
    id: ID!
    author: User!
    comments(first: Int): [Comment!]!
  }
  type User {
    id: ID!
    friends: [User!]!
  }
  type Comment {
    id: ID!
  }
`;

/** Resolver calls by coordinate, counted by the resolvers themselves. */
export type Calls = Record<string, number>;

/** `hold`: what `liar` waits for before answering (a test's gate on when settles start). */
export function resolvers(calls: Calls, hold?: Promise<void>) {
  const hit = (name: string): void => {
    calls[name] = (calls[name] ?? 0) + 1;
  };
  const posts = (n: number) => Array.from({ length: n }, (_, i) => ({ id: String(i) }));
  return {
    Query: {
      search: () => (hit('Query.search'), posts(1)),
      posts: (_: unknown, args: { first?: number }) => (hit('Query.posts'), posts(Math.min(args.first ?? 10, 500))),
      liar: async () => {
        hit('Query.liar');
        await hold;
        return posts(1000);
      },
      me: () => (hit('Query.me'), { id: 'me' }),
      boom: () => {
        hit('Query.boom');
        throw new Error('boom');
      },
    },
    Post: {
      author: (p: { id: string }) => (hit('Post.author'), { id: `a${p.id}` }),
      comments: (_: unknown, args: { first?: number }) => (hit('Post.comments'), posts(args.first ?? 3)),
    },
    User: { friends: () => (hit('User.friends'), [{ id: 'f1' }, { id: 'f2' }]) },
  };
}

/** POSTs a GraphQL request (one operation, or a batch: an array) and answers status, headers and body. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GraphqlBody & GraphqlBody[] };
}

export interface GraphqlBody {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}
