import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  createHttpSlowDown,
  watchPeerAddresses,
  whenResponseDone,
  type LimitsOrLimiter,
  type SlowDownHttpOptions,
  type SlowDownInfo,
} from '@floodgate/core/adapter';
import { checkTrust } from './denial';

declare module 'fastify' {
  interface FastifyRequest {
    /** What slowDown decided for this request: the count, and the delay it waited. */
    slowDown?: SlowDownInfo;
  }
}

/** Every option, each optional (`SlowDownOptions` requires `limits` or `limiter`). */
export interface SlowDownBaseOptions extends SlowDownHttpOptions<FastifyRequest> {
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (request: FastifyRequest, reply: FastifyReply) => boolean | Promise<boolean>;
}

/** `slowDown`'s options: `limits` (with any core option), or a shared `limiter` (one rateLimit also uses). */
export type SlowDownOptions = LimitsOrLimiter<SlowDownBaseOptions>;

/** Default user: `request.user.id`, as for rateLimit. */
const defaultUser = (request: FastifyRequest): unknown => (request as { user?: { id?: unknown } }).user?.id;

async function slowDownPlugin(fastify: FastifyInstance, options: SlowDownOptions): Promise<void> {
  const http = createHttpSlowDown<FastifyRequest>(options, [], defaultUser);
  watchPeerAddresses(fastify.server);
  if ((options as { limiter?: unknown }).limiter === undefined) fastify.addHook('onClose', async () => http.limiter.close());
  // onRequest: before the body is read, and before the rateLimit of a route (route hooks run after the app's).
  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    checkTrust(request, http.warn);
    const outcome = await http.run(request, request.ip, reply.raw);
    if (outcome.action === 'error') throw outcome.error;
    // The client left during its delay: no handler runs for nobody.
    if (outcome.action === 'gone') return reply.hijack();
    for (const [name, value] of outcome.set) reply.header(name, value);
    for (const [name, value] of outcome.append) {
      const before = reply.getHeader(name);
      reply.header(name, before === undefined ? value : `${String(before)}, ${value}`);
    }
    if (outcome.action === 'deny') return reply.code(outcome.status).send(outcome.body);
    if (outcome.info !== undefined) request.slowDown = outcome.info;
    const done = outcome.outcome;
    if (done?.own !== undefined)
      whenResponseDone(reply.raw, (finished) => http.completed(done, finished, reply.raw.statusCode, [request, reply]));
    return undefined;
  });
}

/**
 * After `delayAfter` requests in the window, each further request waits `delayMs` (capped by `maxDelayMs`)
 * before it goes on (docs/slow-down.md): `await app.register(slowDown, { redis, limits, delayAfter: 5 })`
 * slows every route registered after it in that scope. A client that disconnects during its delay never
 * reaches the handler.
 */
export const slowDown = fp(slowDownPlugin, { fastify: '5.x', name: '@floodgate/fastify-slow-down' });
