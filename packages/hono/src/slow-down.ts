import type { Context, MiddlewareHandler } from 'hono';
import {
  createHttpSlowDown,
  ownOptions,
  whenResponseDone,
  type Limiter,
  type LimitsOrLimiter,
  type SlowDownHttpOptions,
  type SlowDownInfo,
} from '@floodgate/core/adapter';
import { CLIENT_ADDRESS_OPTION_KEYS, clientAddress, type ClientAddressOptions } from './client-address';
import { keepHeaders, writeHeaders } from './headers';
import { nextThenWatch, watchOf } from './response-end';
import { defaultUser, deny, gone } from './respond';

declare module 'hono' {
  interface ContextVariableMap {
    /** What slowDown decided for this request: the count, and the delay it waited. */
    slowDown?: SlowDownInfo;
  }
}

/** Every option, each optional (`SlowDownOptions` requires `limits` or `limiter`). */
export interface SlowDownBaseOptions extends SlowDownHttpOptions<Context>, ClientAddressOptions {
  /** Whether a finished response succeeded (skipSuccessfulRequests, skipFailedRequests). Default: status < 400. */
  requestWasSuccessful?: (c: Context) => boolean | Promise<boolean>;
}

/** `slowDown()`'s options: `limits` (with any core option), or a shared `limiter` (one rateLimit also uses). */
export type SlowDownOptions = LimitsOrLimiter<SlowDownBaseOptions>;

export type SlowDownMiddleware = MiddlewareHandler & { readonly limiter: Limiter; close(): Promise<void> };

/**
 * Hono middleware (docs/slow-down.md): after `delayAfter` requests in the window, each further request
 * waits `delayMs` (capped by `maxDelayMs`) before it goes on: `app.use(slowDown({ limits, delayAfter: 5 }))`.
 * A client that disconnects during its delay never reaches the handler.
 */
export function slowDown(options: SlowDownOptions): SlowDownMiddleware {
  const own = ownOptions(options);
  const address = clientAddress(own);
  const http = createHttpSlowDown<Context>(options, CLIENT_ADDRESS_OPTION_KEYS, defaultUser);
  const addressOf = address(http.warn);
  const middleware: MiddlewareHandler = async (c, next) => {
    const watch = watchOf(c);
    const outcome = await http.run(c, addressOf(c), watch.end);
    if (outcome.action === 'error') throw outcome.error;
    // The client left during its delay: no handler runs for nobody.
    if (outcome.action === 'gone') return gone(c);
    writeHeaders(c, outcome.set, outcome.append);
    if (outcome.action === 'deny') return deny(c, outcome);
    if (outcome.info !== undefined) c.set('slowDown', outcome.info);
    const done = outcome.outcome;
    if (done?.own !== undefined) whenResponseDone(watch.end, (finished) => http.completed(done, finished, c.res.status, [c]));
    await nextThenWatch(c, next, watch.owner);
    keepHeaders(c);
  };
  const owned = own.limiter === undefined;
  return Object.assign(middleware, { limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}
