import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ConfigError, createHttpLimiter, describeValue, warned, type Decision, type HttpOptions, type HttpOutcome } from '@floodgate/core';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The tightest Floodgate decision of the limiters that ran on this request. */
      rateLimit?: Decision;
    }
  }
}

export interface RateLimitOptions extends HttpOptions<Request> {
  /** Replaces the default denial response; headers (Retry-After included) are already set. */
  handler?: (req: Request, res: Response, next: NextFunction, decision: Decision) => void | Promise<void>;
}

/** Default user: `req.user.id`, as Passport and most auth middleware leave it. */
function defaultUser(req: Request): unknown {
  return (req as { user?: { id?: unknown } }).user?.id;
}

/**
 * Checks the request's IP source once per process: Express decides `req.ip` from `trust proxy`, so a
 * setting that trusts everything, or a proxy header that is being ignored, is worth one warning.
 */
function checkTrust(req: Request, warn: (name: 'trust-proxy-all' | 'forwarded-header-untrusted', text: string) => void): void {
  const trust: unknown = req.app.get('trust proxy');
  if (trust === true && !warned('trust-proxy-all')) {
    warn('trust-proxy-all', "Express 'trust proxy' is true, so any client can choose its IP with X-Forwarded-For; set it to the number of proxies or their addresses");
  } else if (!trust && req.headers['x-forwarded-for'] !== undefined && !warned('forwarded-header-untrusted')) {
    warn('forwarded-header-untrusted', "X-Forwarded-For arrived but Express 'trust proxy' is off, so every client behind that proxy shares one limit; set 'trust proxy' to your proxy count");
  }
}

/** Express middleware: `app.use(rateLimit(opts))` or `app.post('/search', rateLimit(opts), handler)`. */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const http = createHttpLimiter<Request>(options, ['handler'], defaultUser);
  const handler = options.handler;
  if (handler !== undefined && typeof handler !== 'function') {
    throw new ConfigError('handler', `must be a function (req, res, next, decision); got ${describeValue(handler)}`);
  }
  const respond = (req: Request, res: Response, next: NextFunction, outcome: HttpOutcome): void | Promise<void> => {
    if (outcome.action === 'error') return next(outcome.error);
    if (outcome.decision !== undefined) req.rateLimit = outcome.decision;
    for (const [name, value] of outcome.set) res.setHeader(name, value);
    for (const [name, value] of outcome.append) res.append(name, value);
    if (outcome.action === 'next') return next();
    if (handler !== undefined && outcome.status !== 503) return handler(req, res, next, outcome.decision!);
    res.status(outcome.status).json(outcome.body);
  };
  // Synchronous when the outcome is (a client the block cache already denies): no promise per request.
  const middleware = (req: Request, res: Response, next: NextFunction): void | Promise<void> => {
    checkTrust(req, http.warn);
    const outcome = http.decide(req, req.ip, req.rateLimit);
    if (outcome instanceof Promise) return outcome.then((o) => respond(req, res, next, o));
    return respond(req, res, next, outcome);
  };
  return middleware as RequestHandler;
}

export type { Decision, HeaderMode } from '@floodgate/core';
