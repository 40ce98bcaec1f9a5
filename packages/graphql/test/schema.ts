import { request } from 'node:http';
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

/**
 * POSTs a GraphQL request (one operation, or a batch: an array) on a connection of its own and answers status,
 * headers and body. No keep-alive: a test that holds responses for a while would otherwise reuse a socket the
 * server is closing as idle (ECONNRESET on a loaded machine).
 */
export function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const payload = JSON.stringify(body);
  return new Promise<{ status: number; headers: Headers; body: GraphqlBody & GraphqlBody[] }>((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const out = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') out.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers: out, body: JSON.parse(text) as GraphqlBody & GraphqlBody[] });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

export interface GraphqlBody {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}
