import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import * as floodgateFastify from '@floodgate/fastify';
import { HAND_429, adapter, floodgateOptions, rlfSettle, type AppFactory, type Listen } from './apps';
import { clientOf } from './shapes';

/*
 * Fastify 5: no limiter; Floodgate (@floodgate/fastify); @fastify/rate-limit with its Redis store
 * (registered once per rule to stack several rules, each on its own keys); rate-limiter-flexible in the
 * settle shape only.
 */

function listen(app: FastifyInstance): Listen {
  return async (port) => {
    await app.listen({ port, host: '127.0.0.1' });
  };
}

const floodgate: AppFactory = async (shape, redis, variant) => {
  const app = Fastify();
  await app.register(
    adapter(variant, '@floodgate/fastify', floodgateFastify).default,
    floodgateOptions<{ headers: Record<string, string | string[] | undefined> }>(shape, redis, variant, (req) => req.headers),
  );
  app.get('/', async () => 'ok');
  return listen(app);
};

export const fastifyApps: Record<string, AppFactory> = {
  baseline: async () => {
    const app = Fastify();
    app.get('/', async () => 'ok');
    return listen(app);
  },
  floodgate,
  'floodgate+autopipeline': floodgate,
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
        keyGenerator: (req) => r.id(clientOf(req.headers)),
      });
    }
    app.get('/', async () => 'ok');
    return listen(app);
  },
  // The settle shape: consumed in an onRequest hook, rewarded in onResponse (once the response is sent).
  'rate-limiter-flexible': async (shape, redis) => {
    const peer = rlfSettle(shape, redis);
    const admitted = new WeakSet<FastifyRequest>();
    const app = Fastify();
    app.addHook('onRequest', async (req, reply) => {
      try {
        await peer.consume(clientOf(req.headers));
      } catch (rej) {
        if (rej instanceof Error) throw rej;
        return reply.code(429).send('Too Many Requests');
      }
      admitted.add(req);
    });
    app.addHook('onResponse', async (req) => {
      if (admitted.has(req)) peer.settle(clientOf(req.headers));
    });
    app.get('/', async () => 'ok');
    return listen(app);
  },
  '429': async () => {
    const app = Fastify();
    // Sent from the hook without calling done(), as Floodgate's hook sends a plain denial.
    app.addHook('onRequest', (_req, reply, _done) => {
      void reply.code(429).headers(HAND_429.headers).send(HAND_429.body);
    });
    app.get('/', async () => 'ok');
    return listen(app);
  },
};
