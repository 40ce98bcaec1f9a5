import Fastify, { type FastifyRequest } from 'fastify';
import { answerOf, beforeAnswer, sseReadable, type AdapterFactory, type RoutePath } from '@floodgate/testing';
import rateLimit, { concurrency, slowDown, type RateLimitHookHandler } from '@floodgate/fastify';

/** The suite's app in Fastify: trustProxy '127.0.0.1' stands in for a reverse proxy on this host. */
export const fastifyFactory: AdapterFactory = {
  name: 'fastify',
  async makeApp(spec) {
    const app = Fastify({ trustProxy: spec.trustProxy ? '127.0.0.1' : false });
    let hits = 0;
    try {
      // The auth stand-in: an app-level hook, so it runs before the limiter's route-level one.
      app.addHook('onRequest', async (request) => {
        const id = request.headers['x-user'];
        if (typeof id === 'string') (request as FastifyRequest & { user?: { id: string } }).user = { id };
      });
      if (spec.concurrency) await app.register(concurrency, spec.concurrency);
      if (spec.global && spec.rateLimitFirst) {
        // Route hooks run after the app's: ahead of slowDown's app-level hook, rateLimit is one too. Cast:
        // the root tsconfig also sees the bench's @fastify/rate-limit, whose app.rateLimit type comes first.
        await app.register(rateLimit, { ...spec.global, global: false });
        app.addHook('onRequest', (app.rateLimit as unknown as () => RateLimitHookHandler)());
      }
      if (spec.slowDown) await app.register(slowDown, spec.slowDown);
      if (!(spec.global && spec.rateLimitFirst)) await app.register(rateLimit, spec.global ?? { global: false });
      app.get('/slow', async () => {
        hits++;
        await spec.slow?.();
        return { ok: true };
      });
      app.get('/stream', async (request, reply) => {
        hits++;
        return reply.type('text/event-stream').send(sseReadable(request.headers, spec.stream));
      });
      const routes: [RoutePath, 'GET' | 'POST'][] = [
        ['/', 'GET'],
        ['/search', 'GET'],
        ['/login', 'POST'],
      ];
      for (const [url, method] of routes) {
        const own = spec.routes?.[url];
        app.route({
          method,
          url,
          config: own ? { rateLimit: own } : {},
          handler: async (request, reply) => {
            hits++;
            const { status } = answerOf(request.headers);
            await beforeAnswer(request.headers, spec);
            return reply.code(status).send({ ok: status < 400 });
          },
        });
      }
      if (spec.socketPath) {
        await app.listen({ path: spec.socketPath });
        return { url: 'http://localhost', socketPath: spec.socketPath, hits: () => hits, close: () => app.close() };
      }
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      return { url, hits: () => hits, close: () => app.close() };
    } catch (error) {
      await app.close();
      throw error;
    }
  },
};
