import { createHash } from 'node:crypto';
import {
  ConfigError,
  assertKnownOptions,
  createLimiter,
  describeValue,
  ownOptions,
  type Limiter,
  type LimiterOptions,
  type RuleInput,
} from '@floodgate/core/adapter';
import { hit, type ThrottlerLimiters, type ThrottlerStorageRecord } from './throttler-hits';

export type { ThrottlerStorageRecord } from './throttler-hits';

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

/** A limiter name for a throttler's limiter of one kind: readable when it can be, else a digest of it. */
function nameOf(throttler: string, ...shape: (number | string)[]): string {
  const readable = [throttler, ...shape].join('-');
  return /^[A-Za-z0-9_.-]{1,48}$/.test(throttler) && /^[A-Za-z0-9_.-]{1,48}$/.test(readable) && throttler.length <= 24
    ? readable
    : `h${createHash('sha256')
        .update(JSON.stringify([throttler, ...shape]))
        .digest('hex')
        .slice(0, 24)}`;
}

function positiveInteger(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    throw new ConfigError(option, `must be a positive whole number, as @nestjs/throttler gives it; got ${describeValue(value)}`);
  return value;
}

/**
 * A storage for @nestjs/throttler on Floodgate's core (docs/nestjs.md): `ThrottlerModule.forRoot({
 * throttlers, storage: new FloodgateThrottlerStorage({ redis }) })` keeps @Throttle() and @SkipThrottle(),
 * and puts the counts in Redis (or a Cluster) with Floodgate's failure policies.
 *
 * It answers as @nestjs/throttler 6.7.1's in-memory storage does, record for record: each hit counts for
 * `ttl` ms after it was made (a sliding log: the `'sliding-log'` algorithm, the default). With
 * `blockDuration` 0, a hit at the limit is refused, counts nothing and resets nothing, until the oldest hit
 * leaves its ttl. With a `blockDuration`, the hit that crosses the limit is refused and blocks the key for
 * that long, counting nothing meanwhile, and the count starts from zero when the block ends.
 */
export class FloodgateThrottlerStorage {
  private readonly options: Record<string, unknown>;
  private readonly shapes = new Map<string, ThrottlerLimiters>();

  constructor(options: FloodgateThrottlerStorageOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new ConfigError('options', `must be an object; got ${describeValue(options)}`);
    assertKnownOptions(options, KEYS);
    this.options = { algorithm: 'sliding-log', ...ownOptions(options) };
    // Validated now, not on the first request: a limiter of these options, made and closed at once.
    void createLimiter({ ...this.options, name: 'validate', limits: { limit: 1, window: 1000 } } as LimiterOptions).close();
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    if (typeof blockDuration !== 'number' || Number.isNaN(blockDuration) || blockDuration === Infinity)
      throw new ConfigError('blockDuration', `must be a number of ms (0 or less: no block); got ${describeValue(blockDuration)}`);
    const shape = this.shapeOf(String(throttlerName), positiveInteger(ttl, 'ttl'), positiveInteger(limit, 'limit'));
    const blockMs = blockDuration > 0 ? Math.ceil(blockDuration) : 0;
    if (blockMs > 0 && !shape.held) {
      throw new ConfigError(
        'limit',
        `must be below the largest limit algorithm '${String(this.options.algorithm)}' takes when a blockDuration is set (the storage then keeps limit + 1 hits of a key, which a block answers with, as throttler does); got ${limit}`,
      );
    }
    return hit(shape, key, blockMs);
  }

  /** Closes every limiter this storage made (Nest calls it on shutdown). */
  async onApplicationShutdown(): Promise<void> {
    const shapes = [...this.shapes.values()];
    this.shapes.clear();
    await Promise.all(shapes.flatMap((s) => [s.main, s.quiet, s.record]).map((l) => l.close()));
  }

  /** The limiters of a throttler name, ttl and limit, made on first use. */
  private shapeOf(throttler: string, ttl: number, limit: number): ThrottlerLimiters {
    const id = JSON.stringify([throttler, ttl, limit]);
    const known = this.shapes.get(id);
    if (known !== undefined) return known;
    // Events, and the block cache, are the hits' own: the storage's reads and repairs go unseen.
    const { onEvent: _onEvent, events: _events, ...quietOptions } = this.options;
    const made: Limiter[] = [];
    const make = (options: Record<string, unknown>): Limiter => {
      const limiter = createLimiter(options as unknown as LimiterOptions);
      made.push(limiter);
      return limiter;
    };
    try {
      const name = nameOf(throttler, ttl, limit, 'c');
      const count: RuleInput = { for: 'count', limit, window: ttl };
      let rules: RuleInput[] = [count, { for: 'hits', limit: limit + 1, window: ttl }];
      let main: Limiter;
      try {
        main = make({ ...this.options, name, limits: rules });
      } catch (error) {
        // The algorithm takes `limit` but not one more (sliding-log at its largest): no blockDuration then.
        if (!(error instanceof ConfigError)) throw error;
        rules = [count];
        main = make({ ...this.options, name, limits: rules });
      }
      // The same counts without events or cache; on the memory store on a test clock (a store per limiter), the limiter itself.
      const shared = this.options.redis !== undefined || this.options.clock === undefined;
      const quiet = shared ? make({ ...quietOptions, blockCache: false, name, limits: rules }) : main;
      const record = make({
        ...quietOptions,
        algorithm: 'sliding-log',
        name: nameOf(throttler, ttl, 'r'),
        limits: { limit: 1, window: ttl },
      });
      const shape: ThrottlerLimiters = { ttl, limit, main, quiet, held: rules.length === 2, record };
      this.shapes.set(id, shape);
      return shape;
    } catch (error) {
      for (const l of made) void l.close();
      throw error;
    }
  }
}
