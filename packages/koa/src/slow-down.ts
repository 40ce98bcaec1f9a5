import type { Context, Middleware, Next } from 'koa';
import {
  createHttpSlowDown,
  watchServerOf,
  whenResponseDone,
  type Limiter,
  type LimitsOrLimiter,
  type SlowDownHttpOptions,
  type SlowDownInfo,
  appendHeaderItem,
} from '@floodgate/core/adapter';
import { checkTrust } from './trust';

declare module 'koa' {
  interface DefaultState {
    /** What slowDown decided for this request: the count, and the delay it waited. */
    slowDown?: SlowDownInfo;
  }
}

/** Every option, each optional (`SlowDownOptions` requires `limits` or `limiter`). */
export type SlowDownBaseOptions = SlowDownHttpOptions<Context>;

/** `slowDown()`'s options: `limits` (with any core option), or a shared `limiter` (one rateLimit also uses). */
export type SlowDownOptions = LimitsOrLimiter<SlowDownBaseOptions>;

export type SlowDownMiddleware = Middleware & { readonly limiter: Limiter; close(): Promise<void> };

/** Default user: `ctx.state.user.id`, as for rateLimit. */
const defaultUser = (ctx: Context): unknown => (ctx.state as { user?: { id?: unknown } }).user?.id;

/**
 * Koa middleware (docs/slow-down.md): after `delayAfter` requests in the window, each further request
 * waits `delayMs` (capped by `maxDelayMs`) before it goes on: `app.use(slowDown({ limits, delayAfter: 5 }))`.
 * A client that disconnects during its delay never reaches the handler.
 */
export function slowDown(options: SlowDownOptions): SlowDownMiddleware {
  const http = createHttpSlowDown<Context>(options, [], defaultUser);
  const middleware = async function floodgateSlowDown(ctx: Context, next: Next): Promise<unknown> {
    watchServerOf(ctx.req.socket);
    checkTrust(ctx, http.warn);
    const outcome = await http.run(ctx, ctx.ip, ctx.res);
    if (outcome.action === 'error') throw outcome.error;
    // The client left during its delay: no handler runs for nobody.
    if (outcome.action === 'gone') return undefined;
    for (const [name, value] of outcome.set) ctx.set(name, value);
    // What ctx.append does (nothing once headers are sent), without Koa's get/set wrappers.
    if (!ctx.headerSent) for (const [name, value] of outcome.append) appendHeaderItem(ctx.res, name, value);
    if (outcome.action === 'deny') {
      ctx.status = outcome.status;
      ctx.body = outcome.body;
      return undefined;
    }
    if (outcome.info !== undefined) ctx.state.slowDown = outcome.info;
    const done = outcome.outcome;
    if (done?.own !== undefined) whenResponseDone(ctx.res, (finished) => http.completed(done, finished, ctx.res.statusCode, [ctx]));
    return next();
  };
  const owned = (options as { limiter?: unknown }).limiter === undefined;
  return Object.assign(middleware as Middleware, { limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}
