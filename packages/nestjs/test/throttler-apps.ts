import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule, ThrottlerStorageService, type ThrottlerOptions, type ThrottlerStorage } from '@nestjs/throttler';
import type { INestApplication } from '@nestjs/common';
import type { ThrottlerStorageRecord } from '@floodgate/nestjs';
import type { Platform } from './app-factory';
import { controller, startApp } from './nest-app';

/*
 * @nestjs/throttler's own in-memory storage and FloodgateThrottlerStorage side by side: the same hits, the
 * same answers. Throttler's storage reads Date.now(), and only in the synchronous body of increment(): on
 * a test's clock, Date.now is that clock for the length of that body.
 */

const START = 1_800_000_000_000;

/** A clock a test moves, for both sides (Floodgate's `clock` option, throttler's storage on `now`): ms after START. */
export function testClock(): { now: () => number; at: (ms: number) => void } {
  let t = START;
  return { now: () => t, at: (ms) => void (t = START + ms) };
}

/** Throttler's in-memory storage (the installed version's) on `now`, and its shutdown. */
export function throttlerOnClock(now: () => number = Date.now): ThrottlerStorage & { close(): Promise<void> } {
  const storage = new ThrottlerStorageService();
  return {
    increment(key, ttl, limit, blockDuration, throttlerName) {
      const real = Date.now;
      Date.now = now;
      try {
        return storage.increment(key, ttl, limit, blockDuration, throttlerName);
      } finally {
        Date.now = real;
      }
    },
    close: () => Promise.resolve(storage.onApplicationShutdown()),
  };
}

/**
 * A record as the guard reads it. When a hit is admitted throttler's storage answers a timeToBlockExpire of 0
 * or less (without a blockDuration, 0; with one, the seconds since its last block ended, or since 1970) that
 * nothing reads; FloodgateThrottlerStorage answers 0. The two compare as 0.
 */
export function asGuardReads(record: ThrottlerStorageRecord): ThrottlerStorageRecord {
  const { totalHits, timeToExpire, isBlocked, timeToBlockExpire } = record;
  return { totalHits, timeToExpire, isBlocked, timeToBlockExpire: isBlocked ? timeToBlockExpire : 0 };
}

/**
 * An app whose ThrottlerGuard (APP_GUARD) uses `storage`, with one route, GET /x, which counts its runs in
 * `hits.x`; a refusal's body message is the record the storage answered (an `errorMessage` function), so
 * that a test sees all of it.
 */
export async function throttledApp(
  platform: Platform,
  storage: ThrottlerStorage,
  throttlers: ThrottlerOptions[],
  hits: Record<string, number> = {},
): Promise<{ app: INestApplication; url: string }> {
  return startApp(platform, {
    imports: [
      ThrottlerModule.forRoot({
        throttlers,
        storage,
        errorMessage: (_context, d) =>
          JSON.stringify({
            totalHits: d.totalHits,
            timeToExpire: d.timeToExpire,
            isBlocked: d.isBlocked,
            timeToBlockExpire: d.timeToBlockExpire,
          }),
      }),
    ],
    controllers: [controller('/', { x: [] }, [], hits)],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  });
}
