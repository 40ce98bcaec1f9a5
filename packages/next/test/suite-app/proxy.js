import { NextResponse } from 'next/server';

/*
 * The suites' proxy: what the test set for the app this request reached (suite-factory.ts puts it in a
 * globalThis slot of the process serving it, keyed by the app's id, which its server writes on each request).
 * No limiter there: the request goes on.
 */
const SLOT = Symbol.for('floodgate.next.suite');

export function proxy(request) {
  const suite = globalThis[SLOT];
  return suite === undefined ? NextResponse.next() : suite.proxy(request);
}

export const config = { matcher: '/:path*' };
