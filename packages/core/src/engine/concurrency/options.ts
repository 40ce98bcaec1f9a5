import { ConfigError, describeValue } from '../../kernel/errors';
import { LIMITER_OPTIONS, resolveOptions, type LimiterOptions, type ResolvedOptions } from '../options';
import { optionNames, type OptionTable } from '../../config/option-table';
import { parseDuration } from '../../config/rules';
import { assertKnownOptions, ownOptions } from '../../config/own-options';

export interface ConcurrencyLimiterOptions {
  /** A Redis client (docs/clients.md): ioredis or iovalkey, node-redis, Valkey GLIDE. Omitted: leases live in this process's memory. Floodgate never closes it. */
  redis?: LimiterOptions['redis'];
  /** Part of every key; [A-Za-z0-9_.-]{1,48}. Default 'default'. Limiters with one prefix and name share their slots. */
  name?: string;
  /** Key namespace; [A-Za-z0-9_.-]{1,32}. Default 'floodgate'. */
  prefix?: string;
  /** Requests in flight per identifier, across every process: an integer from 1 to 100,000. */
  max: number;
  /**
   * How long a lease holds its slot if it is never released (its process died): ms or a duration string,
   * up to '1d'. Default '1m'. A request that runs longer loses its slot's guarantee (docs/concurrency.md).
   */
  leaseMs?: number | string;
  /** When the store cannot answer: 'open' (grant, default), 'closed' (deny: 503), 'local' (this process decides). */
  failure?: LimiterOptions['failure'];
  /** The deadline of one acquire, in ms (waiting in this process included). Default 250. */
  timeoutMs?: number;
  onEvent?: LimiterOptions['onEvent'];
  logger?: LimiterOptions['logger'];
  /** Redis Cluster: `colocate: true` keeps every set of this prefix in one slot (one script call per lease). */
  cluster?: { colocate?: boolean };
  /** The memory store and `failure: 'local'` keep at most `maxKeys` identifiers' leases each (default 100,000). */
  memory?: { maxKeys?: number };
  /** Test mode, as createLimiter's: time from this clock instead of Redis TIME. Never set it in production. */
  clock?: () => number;
}

/**
 * A concurrency limiter's options, declared once. Those it shares with createLimiter are checked by
 * resolveOptions, as a limiter's are; `max` and `leaseMs` below.
 */
const CONCURRENCY_OPTIONS: OptionTable<ConcurrencyLimiterOptions> = {
  redis: LIMITER_OPTIONS.redis,
  name: LIMITER_OPTIONS.name,
  prefix: LIMITER_OPTIONS.prefix,
  failure: LIMITER_OPTIONS.failure,
  timeoutMs: LIMITER_OPTIONS.timeoutMs,
  onEvent: LIMITER_OPTIONS.onEvent,
  logger: LIMITER_OPTIONS.logger,
  clock: LIMITER_OPTIONS.clock,
  cluster: LIMITER_OPTIONS.cluster,
  memory: LIMITER_OPTIONS.memory,
  max: {},
  leaseMs: {},
};
export const CONCURRENCY_OPTION_KEYS = optionNames(CONCURRENCY_OPTIONS);
/** The options a concurrency limiter shares with createLimiter. */
const SHARED_KEYS = CONCURRENCY_OPTION_KEYS.filter((key) => Object.hasOwn(LIMITER_OPTIONS, key));

export const MAX_CONCURRENCY = 100_000;
export const DEFAULT_LEASE_MS = 60_000;
/** A longer lease would keep a dead process's slots taken for longer than anyone waits: a day at most. */
export const MAX_LEASE_MS = 86_400_000;

export interface ResolvedConcurrencyOptions {
  /** The options shared with createLimiter, resolved by resolveOptions (its `rules` are a placeholder). */
  readonly common: ResolvedOptions;
  readonly max: number;
  readonly leaseMs: number;
}

/** Validates a concurrency limiter's options once, at construction; errors name the option. */
export function resolveConcurrencyOptions(input: ConcurrencyLimiterOptions): ResolvedConcurrencyOptions {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError('options', `must be an object with at least \`max\`; got ${describeValue(input)}`);
  }
  assertKnownOptions(input, CONCURRENCY_OPTION_KEYS);
  const own = ownOptions(input);
  const max: unknown = own.max;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_CONCURRENCY) {
    throw new ConfigError(
      'max',
      `must be an integer from 1 to ${MAX_CONCURRENCY} (requests in flight per identifier); got ${describeValue(max)}`,
    );
  }
  const leaseMs = own.leaseMs === undefined ? DEFAULT_LEASE_MS : parseDuration(own.leaseMs, 'leaseMs');
  if (leaseMs > MAX_LEASE_MS) throw new ConfigError('leaseMs', `must be at most a day ('1d'); got ${describeValue(own.leaseMs)}`);
  const shared: Record<string, unknown> = {};
  for (const key of SHARED_KEYS) if (own[key] !== undefined) shared[key] = own[key];
  // `limits` is a placeholder that satisfies resolveOptions; no rule is ever evaluated.
  const common = resolveOptions({ ...shared, algorithm: 'fixed-window', limits: { limit: 1, window: 1000 } } as LimiterOptions);
  return { common, max, leaseMs };
}
