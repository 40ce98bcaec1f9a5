import type { StartedRedis } from '../packages/testing/src/redis-server';

export default async function globalTeardown(): Promise<void> {
  const started = (globalThis as { __floodgateRedis?: StartedRedis[] }).__floodgateRedis ?? [];
  await Promise.all(started.map((s) => s.stop()));
}
