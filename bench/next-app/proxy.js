import { NextResponse } from 'next/server';
import { rateLimit } from '@floodgate/next';
import { bench, perApp } from './bench';

/*
 * The proxy, on /proxy only (app/plain, the app with no limiter, never meets it). `floodgate`: the quick
 * start's `rateLimit()`, one per app the process serves; `429`: the same denial written by hand, what a 429
 * from the proxy costs Next itself.
 */
const hand429 = () => Response.json(bench.hand429.body, { status: 429, headers: bench.hand429.headers });
const limiterOf = perApp((floodgate) => rateLimit(floodgate));

export const proxy =
  bench?.proxy === 'floodgate' ? (request) => limiterOf(request)(request) : bench?.proxy === '429' ? hand429 : () => NextResponse.next();

export const config = { matcher: '/proxy' };
