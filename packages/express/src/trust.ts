import type { Request } from 'express';
import { checkProxyTrust, type TrustSetting, type WarningName } from '@floodgate/core/adapter';

const SETTING: TrustSetting = { name: "Express's 'trust proxy'", fix: "set 'trust proxy' to the number of proxies or their addresses" };

/** Express decides `req.ip` from `trust proxy` and says what it is: core's trust-proxy warnings, once per process. */
export function checkTrust(req: Request, warn: (name: WarningName, text: string) => void): void {
  checkProxyTrust(warn, SETTING, () => {
    const trust: unknown = req.app.get('trust proxy');
    const forwarded = req.headers['x-forwarded-for'];
    // A list or a count of proxies: whether it believed this sender shows in req.ip.
    const ignored = trust ? undefined : true;
    return {
      forwarded: typeof forwarded === 'string' ? forwarded : undefined,
      trustsAll: trust === true,
      ignored,
      ip: req.ip,
      peer: req.socket.remoteAddress,
    };
  });
}
