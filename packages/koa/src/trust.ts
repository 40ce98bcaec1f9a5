import type { Context } from 'koa';
import { checkProxyTrust, type HttpLimiter, type TrustSetting } from '@floodgate/core/adapter';

const SETTING: TrustSetting = {
  name: "Koa's app.proxy (with no app.maxIpsCount)",
  fix: 'set app.proxy = true and app.maxIpsCount to the number of proxies',
};

/**
 * Koa decides `ctx.ip` from `app.proxy` and `app.maxIpsCount`: with the proxy trusted and no count, the
 * leftmost of several X-Forwarded-For entries wins; with the proxy not trusted, the header is ignored.
 * Core's trust-proxy warnings, once per process.
 */
export function checkTrust(ctx: Context, warn: HttpLimiter<Context>['warn']): void {
  checkProxyTrust(warn, SETTING, () => {
    const xff = ctx.get('X-Forwarded-For');
    const forwarded = xff === '' ? undefined : xff;
    return {
      forwarded,
      trustsAll: ctx.app.proxy && !ctx.app.maxIpsCount && xff.includes(','),
      ignored: !ctx.app.proxy,
      peer: ctx.req.socket.remoteAddress,
    };
  });
}
