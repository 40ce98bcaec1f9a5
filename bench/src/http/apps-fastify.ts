import Fastify, { type FastifyInstance } from 'fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import floodgate from '@floodgate/fastify';
import type { AppFactory, Listen } from './apps';
import { clientOf, floodgateLimits } from './shapes';

/*
 * Fastify 5: no limiter; Floodgate (@floodgate/fastify); @fastify/rate-limit with its Redis store
 * (registered once per rule to stack several rules, each on its own keys).
 */

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
    await app.register(floodgate, {
      redis,
      name: `bench-${shape.name}`,
      limits: floodgateLimits(shape),
      identify: (req) => shape.identifiers(clientOf(req.headers)),
    });
    app.get('/', async () => 'ok');
    return listen(app);
  },
  '@fastify/rate-limit': async (shape, redis) => {
    const app = Fastify();
    // One registration per rule: hooks made by one registration's fastify.rateLimit() share a per-request
    // "already ran" flag, so only the first would count. Each registration has its own flag and nameSpace.
    for (const [i, r] of shape.peers.entries()) {
      await app.register(fastifyRateLimit, {
        global: true,
        redis,
        nameSpace: `frl${i}-`,
        max: r.limit,
        timeWindow: r.windowMs,
        keyGenerator: (req) => clientOf(req.headers),
      });
    }
    app.get('/', async () => 'ok');
    return listen(app);
  },
};
