import type { StartedRedis } from '../packages/testing/src/redis-server';

export default async function globalTeardown(): Promise<void> {
  const redis = (globalThis as { __floodgateRedis?: StartedRedis }).__floodgateRedis;
  if (redis) await redis.stop();
}
