import type { Context, Middleware, Next } from 'koa';
import { ConfigError, createHttpLimiter, describeValue, warned, type Decision, type HttpLimiter, type HttpOptions, type HttpOutcome } from '@floodgate/core';

declare module 'koa' {
  interface DefaultState {
    /** The tightest Floodgate decision of the limiters that ran on this request. */
    rateLimit?: Decision;
  }
}

export interface RateLimitOptions extends HttpOptions<Context> {
  /** Replaces the default denial response; headers (Retry-After included) are already set. */
  handler?: (ctx: Context, next: Next, decision: Decision) => unknown;
}

/** Default user: `ctx.state.user.id`, where koa-passport and koa-jwt leave the user. */
function defaultUser(ctx: Context): unknown {
  return (ctx.state as { user?: { id?: unknown } }).user?.id;
}

/**
 * Koa decides `ctx.ip` from `app.proxy` and `app.maxIpsCount`: with the proxy trusted and no count, the
 * leftmost X-Forwarded-For entry wins, and any client can write that one; with the proxy not trusted, a
 * forwarded header means everyone behind the proxy shares one IP. Each is worth one warning.
 */
function checkTrust(ctx: Context, warn: HttpLimiter<Context>['warn']): void {
  const xff = ctx.get('X-Forwarded-For');
  if (xff === '') return;
  if (ctx.app.proxy && !ctx.app.maxIpsCount && xff.includes(',') && !warned('trust-proxy-all')) {
    warn('trust-proxy-all', 'Koa app.proxy is true with no app.maxIpsCount, so the leftmost X-Forwarded-For entry, which any client can choose, is the IP; set maxIpsCount to the number of proxies');
  } else if (!ctx.app.proxy && !warned('forwarded-header-untrusted')) {
    warn('forwarded-header-untrusted', 'X-Forwarded-For arrived but Koa app.proxy is false, so every client behind that proxy shares one limit; set app.proxy = true and app.maxIpsCount to your proxy count');
  }
}

/** Koa middleware: `app.use(rateLimit(opts))` or `router.post('/search', rateLimit(opts), handler)`. */
export function rateLimit(options: RateLimitOptions): Middleware {
  const http = createHttpLimiter<Context>(options, ['handler'], defaultUser);
  const handler = options.handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (ctx, next, decision); got ${describeValue(handler)}`);
  }
  const respond = (ctx: Context, next: Next, outcome: HttpOutcome): unknown => {
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.decision !== undefined) ctx.state.rateLimit = outcome.decision;
    for (const [name, value] of outcome.set) ctx.set(name, value);
    for (const [name, value] of outcome.append) ctx.append(name, value);
    if (outcome.action === 'next') return next();
    if (handler !== undefined && outcome.status !== 503) return handler(ctx, next, outcome.decision!);
    ctx.status = outcome.status;
    ctx.body = outcome.body;
    return undefined;
  };
  // Synchronous when the outcome is (a client the block cache already denies): no promise of its own.
  return function floodgate(ctx: Context, next: Next): unknown {
    checkTrust(ctx, http.warn);
    const outcome = http.decide(ctx, ctx.ip, ctx.state.rateLimit);
    if (outcome instanceof Promise) return outcome.then((o) => respond(ctx, next, o));
    return respond(ctx, next, outcome);
  };
}

export type { Decision, HeaderMode } from '@floodgate/core';
