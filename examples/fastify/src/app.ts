import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import rateLimit from '@floodgate/fastify';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
  /** Behind a reverse proxy: how many hops of X-Forwarded-For to trust (request.ip then follows them). */
  trustProxy?: number;
}

/**
 * The example API: every route is under the global limit (20 per 10 s and 500 per hour per client); /search
 * adds its own stricter one; /login adds one per account, so guessing one user's password from many IPs is
 * limited too.
 */
export async function createApp({ redis, prefix = 'floodgate-example', trustProxy }: AppOptions = {}): Promise<FastifyInstance> {
  // Fastify's types take no hop count, so the count becomes proxy-addr's trust function: hop index < count.
  const app = Fastify({ trustProxy: trustProxy === undefined ? false : (_address: string, hop: number) => hop < trustProxy });
  // Routes inherit redis and prefix from the plugin; their own limits ADD to the global one.
  await app.register(rateLimit, {
    redis,
    prefix,
    name: 'api',
    // Plans: the first applies to every client; `npx floodgate override set key:team-7 --plan pro` moves one
    // identifier to another, on the running app (overrides: true reads them; docs/overrides.md).
    limits: {
      free: [
        { limit: 20, window: '10s' },
        { limit: 500, window: '1h' },
      ],
      pro: [
        { limit: 200, window: '10s' },
        { limit: 5000, window: '1h' },
      ],
    },
    overrides: true,
  });

  app.get('/', async (request) => ({ hello: 'world', remaining: request.rateLimit?.remaining }));
  app.get<{ Querystring: { q?: string } }>(
    '/search',
    { config: { rateLimit: { name: 'search', limits: { limit: 3, window: '10s' } } } },
    async (request) => ({ query: typeof request.query.q === 'string' ? request.query.q : '', results: [] }),
  );
  const login = {
    name: 'login',
    limits: { limit: 5, window: '15m' },
    message: 'Too many login attempts for this account; try again later',
    // preValidation: the body is parsed by then, so the limit can be per account (the body's username);
    // requests without one share the client's IP budget.
    hook: 'preValidation' as const,
    identify: (request: { body: unknown }, defaults: string[]) => {
      const username: unknown = (request.body as { username?: unknown } | undefined)?.username;
      return typeof username === 'string' && username !== '' ? `account:${username.toLowerCase()}` : defaults;
    },
  };
  app.post('/login', { config: { rateLimit: login } }, async (_request, reply) =>
    reply.status(401).send({ error: 'invalid credentials (this is a demo)' }),
  );
  return app;
}
