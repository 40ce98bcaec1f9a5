import type { Context, MiddlewareHandler } from 'hono';
import { createHttpConcurrency, ownOptions, type ConcurrencyHttpOptions } from '@floodgate/core/adapter';
import { CLIENT_ADDRESS_OPTION_KEYS, clientAddress, type ClientAddressOptions } from './client-address';
import { writeHeaders } from './headers';
import { nextThenWatch, watchOf } from './response-end';
import { defaultUser, deny, gone } from './respond';

export interface ConcurrencyOptions extends ConcurrencyHttpOptions<Context>, ClientAddressOptions {}

/**
 * Hono middleware: at most `max` requests of one client in flight across every process
 * (docs/concurrency.md): `app.use(concurrency({ redis, max: 5 }))`. The slot is held until the response's
 * body has been read to its end or the client disconnects (a streamed body is still in flight when the
 * handler returns).
 */
export function concurrency(options: ConcurrencyOptions): MiddlewareHandler {
  const address = clientAddress(ownOptions(options));
  const http = createHttpConcurrency<Context>(options, CLIENT_ADDRESS_OPTION_KEYS, defaultUser);
  const addressOf = address(http.warn);
  return async function floodgateConcurrency(c, next) {
    const watch = watchOf(c);
    const outcome = await http.enter(c, addressOf(c), watch.end);
    if (outcome.action === 'error') throw outcome.error;
    // The client left before its lease was granted: the lease is released, and no handler runs for nobody.
    if (outcome.action === 'gone') return gone(c);
    if (outcome.action === 'deny') {
      writeHeaders(c, outcome.set);
      return deny(c, outcome);
    }
    await nextThenWatch(c, next, watch.owner);
  };
}
