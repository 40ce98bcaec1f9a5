import type Redis from 'ioredis';
import { createLimiter, type AlgorithmName } from '@floodgate/core';

/** The `multi` shape's rules: what "memory per identifier with 3 rules" is measured with. */
export const MULTI_LIMITS = [
  { limit: 10, window: '1s' },
  { limit: 120, window: '1m' },
  { limit: 240, window: '1h' },
];

/** Sum of `MEMORY USAGE key SAMPLES 0` over every key matching `pattern` (SCAN, so it is bounded per call). */
export async function keyBytes(redis: Redis, pattern: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    // One pipeline per SCAN batch: a round trip per key made the memory figure the slowest part of a smoke run.
    const pipe = redis.pipeline();
    for (const key of batch) pipe.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    for (const [err, usage] of (await pipe.exec()) ?? []) {
      if (err) throw err;
      keys++;
      bytes += Number(usage);
    }
  } while (cursor !== '0');
  return { keys, bytes };
}

function usedMemory(info: string): number {
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
}

/**
 * Memory per identifier with the 3 multi rules: 1,000 fresh identifiers, 5 allowed checks each (so
 * sliding-log holds 5 timestamps). `usage`: mean MEMORY USAGE of a state key (key name, object, value);
 * `used`: the growth of INFO used_memory per identifier (adds the keyspace's own dict entries).
 */
export async function memoryPerIdentifier(redis: Redis, algorithm: AlgorithmName, name: string): Promise<{ usage: number; used: number }> {
  const limiter = createLimiter({ redis, name, prefix: 'floodgate', algorithm, limits: MULTI_LIMITS });
  const n = 1_000;
  const before = usedMemory(await redis.info('memory'));
  for (let round = 0; round < 5; round++) {
    await Promise.all(Array.from({ length: n }, (_, i) => limiter.check(`ip:192.0.${i >> 8}.${i & 255}`)));
  }
  const after = usedMemory(await redis.info('memory'));
  await limiter.close();
  const { keys, bytes } = await keyBytes(redis, `floodgate:${name}:*`);
  await redis.del(...(await redis.keys(`floodgate:${name}:*`)));
  return { usage: bytes / keys, used: (after - before) / n };
}
