import { routeRateLimit } from '@floodgate/next';
import { prefix, redis, trustProxy } from '../../limits';

export const dynamic = 'force-dynamic';

// A route limit ADDS to the proxy's: 3 per 10 s more.
const limit = routeRateLimit({ redis, prefix, name: 'search', trustProxy, limits: { limit: 3, window: '10s' } });

export const GET = limit((request) => Response.json({ query: request.nextUrl.searchParams.get('q') ?? '', results: [] }));
