import type { Context } from 'koa';
import { warned, type HttpLimiter } from '@floodgate/core/adapter';

/**
 * Koa decides `ctx.ip` from `app.proxy` and `app.maxIpsCount`: with the proxy trusted and no count, the
 * leftmost X-Forwarded-For entry wins, and any client can write that one; with the proxy not trusted, a
 * forwarded header means everyone behind the proxy shares one IP. Each is worth one warning.
 */
export function checkTrust(ctx: Context, warn: HttpLimiter<Context>['warn']): void {
  const xff = ctx.get('X-Forwarded-For');
  if (xff === '') return;
  if (ctx.app.proxy && !ctx.app.maxIpsCount && xff.includes(',') && !warned('trust-proxy-all')) {
    warn(
      'trust-proxy-all',
      'Koa app.proxy is true with no app.maxIpsCount, so the leftmost X-Forwarded-For entry, which any client can choose, is the IP; set maxIpsCount to the number of proxies',
    );
  } else if (!ctx.app.proxy && !warned('forwarded-header-untrusted')) {
    warn(
      'forwarded-header-untrusted',
      'X-Forwarded-For arrived but Koa app.proxy is false, so every client behind that proxy shares one limit; set app.proxy = true and app.maxIpsCount to your proxy count',
    );
  }
}
