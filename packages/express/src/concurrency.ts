import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createHttpConcurrency, watchServerOf, type ConcurrencyHttpOptions, type ConcurrencyOutcome } from '@floodgate/core/adapter';
import { sendDenial } from './deny';

export type ConcurrencyOptions = ConcurrencyHttpOptions<Request>;

/** Default user: `req.user.id`, as for rateLimit. */
const defaultUser = (req: Request): unknown => (req as { user?: { id?: unknown } }).user?.id;

/**
 * Express middleware: at most `max` requests of one client in flight across every process
 * (docs/concurrency.md): `app.use(concurrency({ redis, max: 5 }))`. The slot is held until the response
 * finishes or the client disconnects.
 */
export function concurrency(options: ConcurrencyOptions): RequestHandler {
  const http = createHttpConcurrency<Request>(options, [], defaultUser);
  const respond = (res: Response, next: NextFunction, outcome: ConcurrencyOutcome): void => {
    if (outcome.action === 'error') return next(outcome.error);
    // The client left before its lease was granted: the lease is released, and no handler runs for nobody.
    if (outcome.action === 'gone') return;
    if (outcome.action === 'next') return next();
    for (const [name, value] of outcome.set) res.setHeader(name, value);
    sendDenial(res, outcome);
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    watchServerOf(req.socket);
    http
      .enter(req, req.ip, res)
      .then((outcome) => respond(res, next, outcome))
      .catch(next);
  };
}
