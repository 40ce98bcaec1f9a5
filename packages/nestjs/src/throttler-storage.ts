import { createHash } from 'node:crypto';
import {
  ConfigError,
  assertKnownOptions,
  createLimiter,
  describeValue,
  ownOptions,
  type Decision,
  type Limiter,
  type LimiterOptions,
} from '@floodgate/core/adapter';

/** What @nestjs/throttler's `ThrottlerStorage.increment()` answers (its `ThrottlerStorageRecord`). */
export interface ThrottlerStorageRecord {
  /** Hits counted for the key in its `ttl`, this one included (`limit + 1` while blocked). */
  totalHits: number;
  /** Seconds until the key's count is back to zero. */
  timeToExpire: number;
  /** Whether this hit is refused: it crossed the limit, or the key is blocked. */
  isBlocked: boolean;
  /** Seconds the block has left (0 when not blocked). */
  timeToBlockExpire: number;
}

/** The options of FloodgateThrottlerStorage: where and how the counts live (core's options of that name). */
export type FloodgateThrottlerStorageOptions = Pick<
  LimiterOptions,
  | 'redis'
  | 'prefix'
  | 'algorithm'
  | 'failure'
  | 'timeoutMs'
  | 'cluster'
  | 'memory'
  | 'blockCache'
  | 'logger'
  | 'onEvent'
  | 'events'
  | 'clock'
>;

const KEYS = [
  'redis',
  'prefix',
  'algorithm',
  'failure',
  'timeoutMs',
  'cluster',
  'memory',
  'blockCache',
  'logger',
  'onEvent',
  'events',
  'clock',
];

/** A limiter name for a throttler and its shape: its own name when that is a valid one, else a digest of it. */
function nameOf(throttler: string, ttl: number, limit: number): string {
  const safe = /^[A-Za-z0-9_.-]{1,24}$/.test(throttler)
    ? throttler
    : `h${createHash('sha256').update(throttler).digest('hex').slice(0, 16)}`;
  return `${safe}-${ttl}-${limit}`;
}

const seconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));

/**
 * A storage for @nestjs/throttler on Floodgate's core (docs/nestjs.md): `ThrottlerModule.forRoot({
 * throttlers, storage: new FloodgateThrottlerStorage({ redis }) })` keeps @Throttle() and @SkipThrottle(),
 * and puts the counts in Redis (or a Cluster) with Floodgate's failure policies.
 *
 * It answers as throttler's own in-memory storage does: each hit is counted for `ttl` ms after it was made
 * (a sliding log: the `'sliding-log'` algorithm, the default); the hit that takes a key past `limit` is
 * refused and blocks the key for `blockDuration` ms, during which nothing is counted; when the block ends
 * the count starts again from zero. One limiter per throttler name and (ttl, limit), made on first use.
 */
export class FloodgateThrottlerStorage {
  private readonly options: Record<string, unknown>;
  private readonly limiters = new Map<string, Limiter>();

  constructor(options: FloodgateThrottlerStorageOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new ConfigError('options', `must be an object; got ${describeValue(options)}`);
    assertKnownOptions(options, KEYS);
    this.options = { algorithm: 'sliding-log', ...ownOptions(options) };
    // Validated now, not on the first request: a limiter of these options, made and closed at once.
    void this.limiterFor('validate', 1000, 1).close();
    this.limiters.clear();
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const limiter = this.limiterFor(throttlerName, ttl, limit);
    const decision = await limiter.check(key);
    if (decision.allowed) return this.record(decision, limit, false, 0);
    if (decision.reason !== 'limit') return this.record(decision, limit + 1, true, seconds(decision.retryAfterMs));
    // This hit crossed the limit: the key is blocked (first, so nothing is admitted meanwhile), then its
    // count forgotten, so that the count starts from zero once the block ends.
    const duration = Math.ceil(blockDuration);
    if (duration > 0) await limiter.block(key, { duration, reason: 'throttler' });
    await limiter.reset(key);
    // No block at all: the in-memory storage then lets this hit through as the first of a new count.
    if (duration <= 0) return this.record(await limiter.check(key), limit, false, 0);
    return { totalHits: limit + 1, timeToExpire: seconds(ttl), isBlocked: true, timeToBlockExpire: seconds(duration) };
  }

  /** Closes every limiter this storage made (Nest calls it on shutdown). */
  async onApplicationShutdown(): Promise<void> {
    const limiters = [...this.limiters.values()];
    this.limiters.clear();
    await Promise.all(limiters.map((l) => l.close()));
  }

  private record(decision: Decision, limit: number, isBlocked: boolean, timeToBlockExpire: number): ThrottlerStorageRecord {
    // A decision of the failure policy knows no count: none is reported.
    const totalHits = decision.states.length === 0 ? (isBlocked ? limit : 0) : Math.max(0, decision.limit - decision.remaining);
    return {
      totalHits: isBlocked ? Math.max(totalHits, limit) : totalHits,
      timeToExpire: seconds(decision.resetMs),
      isBlocked,
      timeToBlockExpire,
    };
  }

  private limiterFor(throttler: string, ttl: number, limit: number): Limiter {
    const name = nameOf(throttler, ttl, limit);
    let limiter = this.limiters.get(name);
    if (limiter === undefined) {
      limiter = createLimiter({ ...this.options, name, limits: { limit, window: ttl } } as LimiterOptions);
      this.limiters.set(name, limiter);
    }
    return limiter;
  }
}
