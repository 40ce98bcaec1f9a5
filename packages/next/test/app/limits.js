import Redis from 'ioredis';
import { actionRateLimit, routeRateLimit } from '@floodgate/next';

// No Redis while `next build` loads the modules (lazyConnect: no connection until a command).
const redis = new Redis(process.env.FG_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: process.env.FG_REDIS_URL === undefined });
const trust = process.env.FG_TRUST_PROXY;
// A deadline no loaded machine misses: a check that outran the default would fail open, and the verdicts change.
const timeoutMs = 10_000;
const trustProxy = trust === undefined ? undefined : /^\d+$/.test(trust) ? Number(trust) : trust.split(',');
// Unset while `next build` loads the modules; set by the test at `next start`.
const prefix = process.env.FG_PREFIX ?? 'build';

/** A route's own limit, on top of the proxy's. */
export const limited = routeRateLimit({ redis, prefix: `${prefix}.r`, limits: { limit: 2, window: '1m' }, trustProxy, timeoutMs });

/** A budget of 10 tokens: each streamed request reserves 4 and settles what its body really sent. */
export const budget = routeRateLimit({
  redis,
  prefix: `${prefix}.b`,
  limits: { limit: 10, window: '1m' },
  cost: () => 4,
  settle: (request) => Number(new URL(request.url).searchParams.get('chunks') ?? '1'),
  trustProxy,
  timeoutMs,
});

export const action = actionRateLimit({ redis, prefix: `${prefix}.a`, limits: { limit: 2, window: '1m' }, trustProxy, timeoutMs });
