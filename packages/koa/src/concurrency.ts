import type { Context, Middleware, Next } from 'koa';
import { createHttpConcurrency, watchServerOf, type ConcurrencyHttpOptions } from '@floodgate/core/adapter';

export type ConcurrencyOptions = ConcurrencyHttpOptions<Context>;

/** Default user: `ctx.state.user.id`, as for rateLimit. */
const defaultUser = (ctx: Context): unknown => (ctx.state as { user?: { id?: unknown } }).user?.id;

/**
 * Koa middleware: at most `max` requests of one client in flight across every process
 * (docs/concurrency.md): `app.use(concurrency({ redis, max: 5 }))`. The slot is held until the response
 * finishes or the client disconnects (not when `next()` returns: a streamed body is still in flight).
 */
export function concurrency(options: ConcurrencyOptions): Middleware {
  const http = createHttpConcurrency<Context>(options, [], defaultUser);
  return async function floodgateConcurrency(ctx: Context, next: Next): Promise<unknown> {
    watchServerOf(ctx.req.socket);
    const outcome = await http.enter(ctx, ctx.ip, ctx.res);
    if (outcome.action === 'error') throw outcome.error;
    // The client left before its lease was granted: the lease is released, and no handler runs for nobody.
    if (outcome.action === 'gone') return undefined;
    if (outcome.action === 'next') return next();
    for (const [name, value] of outcome.set) ctx.set(name, value);
    ctx.status = outcome.status;
    ctx.body = outcome.body;
    return undefined;
  };
}
