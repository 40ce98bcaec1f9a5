import Redis from 'ioredis';

// One Redis client for the proxy and the routes. While `next build` loads the modules there is no Redis to
// talk to: lazyConnect then (no connection until a command).
const { REDIS_URL = 'redis://127.0.0.1:6379', STORE, TRUST_PROXY } = process.env;
const building = process.env.NEXT_PHASE === 'phase-production-build';
export const redis = STORE === 'memory' ? undefined : new Redis(REDIS_URL, { lazyConnect: building });
export const prefix = process.env.PREFIX ?? 'floodgate-example';
/** Behind a reverse proxy: a hop count or its addresses, whose X-Forwarded-For is believed. */
export const trustProxy = TRUST_PROXY === undefined ? undefined : /^\d+$/.test(TRUST_PROXY) ? Number(TRUST_PROXY) : TRUST_PROXY.split(',');
