import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { createSchema, createYoga, type Plugin } from 'graphql-yoga';
// The built packages, as users run them (`npm run bench:graphql` builds first).
import { rateLimitDirective, useRateLimit } from '@floodgate/graphql';
import { DIRECTIVE_SDL, RedisStore, useRateLimiter } from '@envelop/rate-limiter';

/*
 * One server of `npm run bench:graphql` (graphql.ts starts one per case, in a process of its own, pinned to
 * SERVER_CORE): GraphQL Yoga answering `{ posts(first: 100) { id author { name } } }`, whose Post.author is
 * a limited field (100 selections per operation), with no limits, with @floodgate/graphql, or with
 * @envelop/rate-limiter on its Redis store. Limits no client reaches: every operation does the full work.
 * `GET /commands` answers how many commands this process has sent to Redis (scripts' own commands are not
 * sent, so they are not counted); `GET /cpu`, the CPU time this process has used (user + system, µs). argv: <case> <redis url>; prints `port <n>` once listening.
 */
const [kind = 'none', url = 'redis://127.0.0.1:6379'] = process.argv.slice(2);
const posts = Array.from({ length: 100 }, (_, i) => ({ id: String(i), author: { name: `a${i % 7}` } }));
const base = /* GraphQL */ `
  type Query {
    posts(first: Int!): [Post!]!
  }
  type Author {
    name: String!
  }
`;
const resolvers = { Query: { posts: (_: unknown, a: { first: number }) => posts.slice(0, a.first) } };
const plugins: Plugin[] = [];
let sent = 0;
/** An ioredis client whose every command (one in a pipeline too) is counted. */
function counted(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
    sent++;
    return send(...args);
  };
  return redis;
}
let typeDefs: string;
if (kind === 'floodgate') {
  const redis = counted(new Redis(url));
  typeDefs = `${rateLimitDirective} ${base} type Post { id: ID! author: Author! @rateLimit(limit: 1000000000, window: "1m") }`;
  plugins.push(
    useRateLimit({
      redis,
      prefix: 'bench-graphql',
      limits: [
        { limit: 1_000_000_000, window: '1m' },
        { limit: 1_000_000_000, window: '1m', unit: 'cost' },
      ],
      identity: () => 'bench',
    }) as unknown as Plugin,
  );
} else if (kind === 'envelop-rate-limiter') {
  const redis = counted(new Redis(url));
  typeDefs = `${DIRECTIVE_SDL} ${base} type Post { id: ID! author: Author! @rateLimit(max: 1000000000, window: "1m") }`;
  plugins.push(useRateLimiter({ identifyFn: () => 'bench', store: new RedisStore(redis) }) as unknown as Plugin);
} else {
  typeDefs = `${base} type Post { id: ID! author: Author! }`;
}
const yoga = createYoga({ schema: createSchema({ typeDefs, resolvers }), plugins, logging: false });
const server = createServer((req, res) => {
  if (req.url === '/commands') return void res.end(String(sent));
  if (req.url === '/cpu') {
    const { user, system } = process.cpuUsage();
    return void res.end(String(user + system));
  }
  void yoga(req, res);
});
server.listen(0, '127.0.0.1', () => console.log(`port ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => process.exit(0));
