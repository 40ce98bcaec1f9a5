import { routeRateLimit } from '@floodgate/next';
import { bench } from '../../bench';

// The route handler wrapped with `routeRateLimit()`, created once at module level as the docs say.
export const dynamic = 'force-dynamic';

const ok = () => new Response('ok');

export const GET = bench?.floodgate === undefined ? ok : routeRateLimit(bench.floodgate)(ok);
