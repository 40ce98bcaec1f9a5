import Redis from 'ioredis';
import { chain, rateLimit } from '@floodgate/next';

/*
 * The test app's proxy (packages/next/test/next-app.test.ts): one build, configured at `next start` by
 * the environment, so each run gets its own prefix and trust setting.
 */
// No Redis while `next build` loads the modules (lazyConnect: no connection until a command).
const redis = new Redis(process.env.FG_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: process.env.FG_REDIS_URL === undefined });
const prefix = process.env.FG_PREFIX ?? 'build';
const trust = process.env.FG_TRUST_PROXY;
// A deadline no loaded machine misses: a check that outran the default would fail open, and the verdicts change.
const timeoutMs = 10_000;
const trustProxy = trust === undefined ? undefined : /^\d+$/.test(trust) ? Number(trust) : trust.split(',');

export const proxy = chain(
  rateLimit({ redis, prefix: `${prefix}.p`, limits: { limit: 4, window: '1m' }, matcher: '/api/:path*', trustProxy, timeoutMs }),
  rateLimit({ redis, prefix: `${prefix}.l`, limits: { limit: 1, window: '1m' }, matcher: '/api/hello/login', trustProxy, timeoutMs }),
);

export const config = { matcher: '/api/:path*' };
