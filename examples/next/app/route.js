import { remainingOf } from '@floodgate/next';

export const dynamic = 'force-dynamic';

/** The global limit only (the proxy's): how many requests it leaves, and its RateLimit headers on the response. */
export function GET(request) {
  return Response.json({ hello: 'world', remaining: remainingOf(request.headers) });
}
