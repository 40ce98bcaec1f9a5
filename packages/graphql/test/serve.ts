import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga, type Plugin } from 'graphql-yoga';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { resolvers, typeDefs, type Calls } from './schema';

/** A real Yoga on a socket. */
export async function serveYoga(plugins: unknown[], calls: Calls, extra: { batching?: boolean; hold?: Promise<void> } = {}) {
  const yoga = createYoga({
    schema: createSchema({ typeDefs, resolvers: resolvers(calls, extra.hold) }),
    plugins: plugins as Plugin[],
    batching: extra.batching ? { limit: 100 } : false,
    logging: false,
    maskedErrors: false,
  });
  const server: Server = createServer(yoga);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A real Apollo standalone server, its context carrying the request (for the client address). */
export async function serveApollo(plugins: unknown[], calls: Calls, extra: { batching?: boolean; hold?: Promise<void> } = {}) {
  const server = new ApolloServer({
    typeDefs,
    resolvers: resolvers(calls, extra.hold),
    plugins: plugins as ApolloServerPlugin[],
    allowBatchedHttpRequests: extra.batching ?? false,
  });
  const { url } = await startStandaloneServer(server, { listen: { port: 0, host: '127.0.0.1' }, context: async ({ req }) => ({ req }) });
  return { url, close: () => server.stop() };
}
