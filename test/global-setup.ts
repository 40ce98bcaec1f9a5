import { startRedis } from '../packages/testing/src/redis-server';

/** Starts the shared test redis-server on a free port, unless REDIS_URL points at one. */
export default async function globalSetup(): Promise<void> {
  if (process.env.REDIS_URL) {
    process.env.FLOODGATE_TEST_REDIS_URL = process.env.REDIS_URL;
    return;
  }
  const redis = await startRedis();
  (globalThis as { __floodgateRedis?: unknown }).__floodgateRedis = redis;
  process.env.FLOODGATE_TEST_REDIS_URL = redis.url;
}
