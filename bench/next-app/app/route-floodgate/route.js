import { routeRateLimit } from '@floodgate/next';
import { bench, perApp } from '../../bench';

// The route handler wrapped with `routeRateLimit()`, as the docs say (one per app the process serves).
export const dynamic = 'force-dynamic';

const ok = () => new Response('ok');
const handlerOf = perApp((floodgate) => routeRateLimit(floodgate)(ok));

export const GET = bench?.apps === undefined ? ok : (request, context) => handlerOf(request)(request, context);
