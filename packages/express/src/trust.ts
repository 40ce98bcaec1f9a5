import type { Request } from 'express';
import { warned } from '@floodgate/core/adapter';

/**
 * Checks the request's IP source once per process: Express decides `req.ip` from `trust proxy`, so a
 * setting that trusts everything, or a proxy header that is being ignored, is worth one warning.
 */
export function checkTrust(req: Request, warn: (name: 'trust-proxy-all' | 'forwarded-header-untrusted', text: string) => void): void {
  const trust: unknown = req.app.get('trust proxy');
  if (trust === true && !warned('trust-proxy-all')) {
    warn(
      'trust-proxy-all',
      "Express 'trust proxy' is true, so any client can choose its IP with X-Forwarded-For; set it to the number of proxies or their addresses",
    );
  } else if (!trust && req.headers['x-forwarded-for'] !== undefined && !warned('forwarded-header-untrusted')) {
    warn(
      'forwarded-header-untrusted',
      "X-Forwarded-For arrived but Express 'trust proxy' is off, so every client behind that proxy shares one limit; set 'trust proxy' to your proxy count",
    );
  }
}
