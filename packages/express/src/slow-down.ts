import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  createHttpSlowDown,
  watchServerOf,
  whenResponseDone,
  type Limiter,
  type LimitsOrLimiter,
  type SlowDownHttpOptions,
  type SlowDownInfo,
  type SlowDownOutcome,
  appendHeaderItem,
} from '@floodgate/core/adapter';
import { checkTrust } from './trust';
import { sendDenial } from './deny';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** What slowDown decided for this request: the count, and the delay it waited. */
      slowDown?: SlowDownInfo;
    }
  }
}

/** Every option, each optional (`SlowDownOptions` requires `limits` or `limiter`). */
export interface SlowDownBaseOptions extends SlowDownHttpOptions<Request> {
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (req: Request, res: Response) => boolean | Promise<boolean>;
}

/** `slowDown()`'s options: `limits` (with any core option), or a shared `limiter` (one rateLimit also uses). */
export type SlowDownOptions = LimitsOrLimiter<SlowDownBaseOptions>;

export type SlowDownMiddleware = RequestHandler & { readonly limiter: Limiter; close(): Promise<void> };

/** Default user: `req.user.id`, as for rateLimit. */
const defaultUser = (req: Request): unknown => (req as { user?: { id?: unknown } }).user?.id;

/**
 * Express middleware (docs/slow-down.md): after `delayAfter` requests in the window, each further request
 * waits `delayMs` (capped by `maxDelayMs`) before it goes on: `app.use(slowDown({ limits, delayAfter: 5 }))`.
 * A client that disconnects during its delay never reaches the handler.
 */
export function slowDown(options: SlowDownOptions): SlowDownMiddleware {
  const http = createHttpSlowDown<Request>(options, [], defaultUser);
  const respond = (req: Request, res: Response, next: NextFunction, outcome: SlowDownOutcome): void => {
    if (outcome.action === 'error') return next(outcome.error);
    // The client left during its delay: no handler runs for nobody.
    if (outcome.action === 'gone') return;
    for (const [name, value] of outcome.set) res.setHeader(name, value);
    for (const [name, value] of outcome.append) appendHeaderItem(res, name, value);
    if (outcome.action === 'deny') return sendDenial(res, outcome);
    if (outcome.info !== undefined) req.slowDown = outcome.info;
    const done = outcome.outcome;
    if (done?.own !== undefined) whenResponseDone(res, (finished) => http.completed(done, finished, res.statusCode, [req, res]));
    next();
  };
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    watchServerOf(req.socket);
    const ip = req.ip;
    checkTrust(req, ip, http.warn);
    http
      .run(req, ip, res)
      .then((outcome) => respond(req, res, next, outcome))
      .catch(next);
  };
  const owned = (options as { limiter?: unknown }).limiter === undefined;
  return Object.assign(middleware as RequestHandler, {
    limiter: http.limiter,
    close: async () => (owned ? http.limiter.close() : undefined),
  });
}
