import Fastify, { type FastifyRequest } from 'fastify';
import { type AdapterFactory, type RoutePath } from '@floodgate/testing';
import rateLimit from '@floodgate/fastify';

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
      await app.register(rateLimit, spec.global ?? { global: false });
      const routes: [RoutePath, 'GET' | 'POST'][] = [['/', 'GET'], ['/search', 'GET'], ['/login', 'POST']];
      for (const [url, method] of routes) {
        const own = spec.routes?.[url];
        app.route({ method, url, config: own ? { rateLimit: own } : {}, handler: async () => (hits++, { ok: true }) });
      }
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      return { url, hits: () => hits, close: () => app.close() };
    } catch (error) {
      await app.close();
      throw error;
    }
  },
};

