import Redis from 'ioredis';
import type { StartedRedis } from '../packages/testing/src/redis-server';

/**
 * Keys a test left on the shared server outside a prefix of its own (uniquePrefix(): `<label>-<8 hex>`, or one a test extends):
 * with REDIS_URL set they would have been on a user's server, under a name the user may use (`floodgate:*`,
 * the default prefix, included). Only on the server the global setup started (never SCAN a user's server).
 */
const OWN_PREFIX = /^[A-Za-z0-9_.-]{0,12}-[0-9a-f]{8}/;

async function strayKeys(url: string): Promise<string[]> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  const stray: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'COUNT', 1000);
      cursor = next;
      stray.push(...batch.filter((k) => !OWN_PREFIX.test(k)));
    } while (cursor !== '0' && stray.length < 20);
  } finally {
    client.disconnect();
  }
  return stray;
}

export default async function globalTeardown(): Promise<void> {
  const started = (globalThis as { __floodgateRedis?: StartedRedis[] }).__floodgateRedis ?? [];
  const stray = (await Promise.all(started.map((s) => strayKeys(s.url).finally(() => s.stop())))).flat();
  if (stray.length > 0)
    throw new Error(`tests left keys outside a uniquePrefix() of their own on the shared test Redis: ${stray.slice(0, 20).join(', ')}`);
}
