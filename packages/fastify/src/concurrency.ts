import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { createHttpConcurrency, watchPeerAddresses, type ConcurrencyHttpOptions } from '@floodgate/core/adapter';

export type ConcurrencyOptions = ConcurrencyHttpOptions<FastifyRequest>;

/** Default user: `request.user.id`, as for rateLimit. */
const defaultUser = (request: FastifyRequest): unknown => (request as { user?: { id?: unknown } }).user?.id;

async function concurrencyPlugin(fastify: FastifyInstance, options: ConcurrencyOptions): Promise<void> {
  const http = createHttpConcurrency<FastifyRequest>(options, [], defaultUser);
  watchPeerAddresses(fastify.server);
  // onRequest: before the body is read, so a client trickling a slow upload holds its slot meanwhile.
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const outcome = await http.enter(request, request.ip, reply.raw);
    if (outcome.action === 'next') return;
    if (outcome.action === 'error') throw outcome.error;
    // The client left before its lease was granted: the lease is released, and no handler runs for nobody.
    if (outcome.action === 'gone') return reply.hijack();
    for (const [name, value] of outcome.set) reply.header(name, value);
    return reply.code(outcome.status).send(outcome.body);
  });
}

/**
 * At most `max` requests of one client in flight across every process (docs/concurrency.md):
 * `await app.register(concurrency, { redis, max: 5 })` limits every route registered after it in that
 * scope (register it inside a plugin to limit only that plugin's routes). The slot is held until the
 * response finishes or the client disconnects.
 */
export const concurrency = fp(concurrencyPlugin, { fastify: '5.x', name: '@floodgate/fastify-concurrency' });
