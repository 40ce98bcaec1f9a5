import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import rateLimit from '@floodgate/fastify';
import { API_LIMIT, LOGIN_LIMIT, SEARCH_LIMIT, loginIdentifiers, replies, trustedHops } from '@floodgate/embedded-redis';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
}

/** The example API (see example-api.ts in @floodgate/embedded-redis) in Fastify. */
export async function createApp({ redis, prefix = 'floodgate-example' }: AppOptions = {}): Promise<FastifyInstance> {
  // Behind a reverse proxy, TRUST_PROXY=<hops>: request.ip then follows X-Forwarded-For that far.
  // (Fastify's types take no hop count, so the count becomes proxy-addr's trust function: hop index < count.)
  const hops = trustedHops();
  const app = Fastify({ trustProxy: hops === undefined ? false : (_address: string, hop: number) => hop < hops });
  // Routes inherit redis and prefix from the plugin; their own limits ADD to the global one.
  await app.register(rateLimit, { redis, prefix, ...API_LIMIT });

  app.get('/', async (request) => replies.home(request.rateLimit?.remaining));
  app.get<{ Querystring: { q?: string } }>('/search', { config: { rateLimit: SEARCH_LIMIT } }, async (request) =>
    replies.search(request.query.q),
  );
  // preValidation: the body is parsed by then, so the limit can be per account.
  const login = {
    ...LOGIN_LIMIT,
    hook: 'preValidation' as const,
    identify: (request: { body: unknown }, defaults: string[]) => loginIdentifiers(request.body, defaults),
  };
  app.post('/login', { config: { rateLimit: login } }, async (_request, reply) =>
    reply.status(replies.login.status).send(replies.login.body),
  );
  return app;
}
