import type { Request } from 'express';
import { checkProxyTrust, type TrustSetting, type WarningName } from '@floodgate/core/adapter';

const SETTING: TrustSetting = { name: "Express's 'trust proxy'", fix: "set 'trust proxy' to the number of proxies or their addresses" };

/**
 * Express decides `req.ip` from `trust proxy` and says what it is: core's trust-proxy warnings, once per process.
 * `ip` is the `req.ip` the middleware read (a getter that parses the header and runs the trust function: read once).
 */
export function checkTrust(req: Request, ip: string | undefined, warn: (name: WarningName, text: string) => void): void {
  checkProxyTrust(warn, SETTING, () => {
    const trust: unknown = req.app.get('trust proxy');
    const header = req.headers['x-forwarded-for'];
    const forwarded = typeof header === 'string' ? header : undefined;
    // A list or a count of proxies: whether it believed this sender shows in req.ip.
    const ignored = trust ? undefined : true;
    return {
      forwarded,
      trustsAll: trust === true,
      ignored,
      ip,
      peer: req.socket.remoteAddress,
    };
  });
}
