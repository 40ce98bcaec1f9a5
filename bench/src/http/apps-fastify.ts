import Fastify, { type FastifyInstance } from 'fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import { createHttpLimiter } from '@floodgate/core';
import type { AppFactory, Listen } from './apps';
import { clientOf, floodgateLimits } from './shapes';

/*
 * Fastify 5: no limiter; Floodgate; @fastify/rate-limit with its Redis store (registered once per rule
 * to stack several rules, each on its own keys).
 * Until @floodgate/fastify is merged, Floodgate here is INTERIM: core's createHttpLimiter (the logic every
 * adapter shares) in a 15-line onRequest hook; results label it so.
 */
export const FASTIFY_FLOODGATE_INTERIM = true;

function listen(app: FastifyInstance): Listen {
  return async (port) => {
    await app.listen({ port, host: '127.0.0.1' });
  };
}

export const fastifyApps: Record<string, AppFactory> = {
  baseline: async () => {
    const app = Fastify();
    app.get('/', async () => 'ok');
    return listen(app);
  },
  floodgate: async (shape, redis) => {
    const app = Fastify();
    const http = createHttpLimiter<{ headers: Record<string, string | string[] | undefined> }>({
      redis, name: `bench-${shape.name}`, limits: floodgateLimits(shape), identify: (req) => shape.identifiers(clientOf(req.headers)),
    });
    app.addHook('onRequest', async (request, reply) => {
      const outcome = await http.run(request, request.ip);
      if (outcome.action === 'error') throw outcome.error;
      for (const [name, value] of outcome.set) reply.header(name, value);
      for (const [name, value] of outcome.append) reply.header(name, value);
      if (outcome.action === 'deny') return reply.code(outcome.status).send(outcome.body);
    });
    app.get('/', async () => 'ok');
    return listen(app);
  },
  '@fastify/rate-limit': async (shape, redis) => {
    const app = Fastify();
    // One registration per rule: hooks made by one registration's fastify.rateLimit() share a per-request
    // "already ran" flag, so only the first would count. Each registration has its own flag and nameSpace.
    for (const [i, r] of shape.peers.entries()) {
      await app.register(fastifyRateLimit, { global: true, redis, nameSpace: `frl${i}-`, max: r.limit, timeWindow: r.windowMs, keyGenerator: (req) => clientOf(req.headers) });
    }
    app.get('/', async () => 'ok');
    return listen(app);
  },
};
