import type { Algorithm, AlgorithmName } from './algorithms/types';
import { ALGORITHMS } from './algorithms';
import { ConfigError, describeValue } from './errors';
import { resolveRules, type Rule, type RuleInput } from './rules';
import type { RedisClient } from './stores/redis';
import type { Decision } from './decision';
import type { StoreError } from './errors';

export type FailurePolicy = 'open' | 'closed' | 'local';
export type LimiterMode = 'enforce' | 'shadow';

export interface Logger {
  warn(message: string): void;
}

export type LimiterEvent =
  | { type: 'store-error'; limiter: string; error: StoreError; policy: FailurePolicy }
  | { type: 'shadow-deny'; limiter: string; decision: Decision };

export interface LimiterOptions {
  /** An ioredis `Redis` (or `Cluster`). Omitted: the in-memory store. Floodgate never closes it. */
  redis?: RedisClient;
  /** Part of every key; [A-Za-z0-9_.-]{1,48}. Default 'default'. */
  name?: string;
  /** Key namespace; [A-Za-z0-9_.-]{1,32}. Default 'floodgate'. */
  prefix?: string;
  algorithm?: AlgorithmName;
  limits: RuleInput | RuleInput[];
  /** What a check answers when the store cannot: 'open' (allow, default), 'closed' (deny), 'local'. */
  failure?: FailurePolicy;
  /** The limiter's own deadline for one call to the store, in ms. Default 250. */
  timeoutMs?: number;
  /** 'shadow' counts and reports would-be denials (onEvent) but allows everything. */
  mode?: LimiterMode;
  /** Denied checks consume too (a client that keeps hammering stays limited). Default false. */
  penalty?: boolean;
  /**
   * In-process cache of denials (see block-cache.ts): a client hammering while limited costs no Redis
   * command until its retry time. Default { max: 10000 } entries per limiter; false turns it off.
   */
  blockCache?: { max: number } | false;
  /**
   * Redis Cluster: `colocate: true` keeps every key of every limiter with this prefix in one hash slot
   * (strict atomicity in one script call, one hot slot). Default false: keys per identifier, one call per
   * slot, undo receipts for all or nothing.
   */
  cluster?: { colocate?: boolean };
  onEvent?: (event: LimiterEvent) => void;
  /** Warnings go here; default process.emitWarning. Floodgate never writes to the console. */
  logger?: Logger;
  /**
   * Test mode: take time from this clock (ms since the epoch) instead of Redis TIME, with TTLs padded by
   * 10 minutes because Redis still expires keys in real time. Never set it in production.
   */
  clock?: () => number;
}

export interface ResolvedOptions {
  readonly redis: RedisClient | undefined;
  readonly name: string;
  readonly prefix: string;
  readonly algorithm: Algorithm;
  readonly rules: readonly Rule[];
  readonly failure: FailurePolicy;
  readonly timeoutMs: number;
  readonly mode: LimiterMode;
  readonly penalty: boolean;
  /** Entries in the block cache; 0 when it is off. */
  readonly blockCacheMax: number;
  readonly colocate: boolean;
  readonly onEvent: ((event: LimiterEvent) => void) | undefined;
  readonly logger: Logger;
  readonly clock: (() => number) | undefined;
}

export const LIMITER_OPTION_KEYS = [
  'redis', 'name', 'prefix', 'algorithm', 'limits', 'failure', 'timeoutMs', 'mode', 'penalty', 'onEvent',
  'logger', 'clock', 'blockCache', 'cluster',
] as const;

/** What the options of express-rate-limit, rate-limiter-flexible and @fastify/rate-limit are called here. */
const PEER_NAMES: Record<string, string> = {
  windowMs: "`limits: [{ limit, window }]` (window takes ms or '1m')",
  max: '`limits: [{ limit, window }]`',
  limit: '`limits: [{ limit, window }]`',
  window: '`limits: [{ limit, window }]`',
  points: '`limits: [{ limit, window }]`',
  duration: "`limits: [{ limit, window }]` (window takes ms or '1m')",
  timeWindow: "`limits: [{ limit, window }]` (window takes ms or '1m')",
  keyGenerator: '`identify(req, defaults)`',
  keyPrefix: '`prefix`',
  storeClient: '`redis` (an ioredis client)',
  store: '`redis` (an ioredis client)',
  client: '`redis` (an ioredis client)',
  blockDuration: '`limiter.block(identifier, { duration })`',
  insuranceLimiter: "`failure: 'local'`",
  skipOnError: "`failure: 'open'`",
  passOnStoreError: "`failure: 'open'`",
  standardHeaders: "`headers: 'draft-8' | 'draft-7' | 'draft-6' | 'legacy' | false`",
  legacyHeaders: "`headers: 'legacy'`",
  addHeaders: '`headers`',
  enableDraftSpec: "`headers: 'draft-8'`",
  keyPrefixSeparator: '`prefix`',
  whitelist: '`skip(req)`',
  allowList: '`skip(req)`',
  errorResponseBuilder: '`message` or `handler`',
};

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * Throws on option names that are not in `known`, with what Floodgate calls a peer's option, or the
 * closest name. `path` names the enclosing option for nested objects ('blockCache.').
 */
export function assertKnownOptions(input: object, known: readonly string[], path = ''): void {
  for (const key of Object.keys(input)) {
    if (known.includes(key)) continue;
    const peer = path === '' ? PEER_NAMES[key] : undefined;
    if (peer) throw new ConfigError(key, `is not a Floodgate option: Floodgate calls it ${peer}`);
    const close = known.filter((k) => editDistance(key, k) <= 2).sort((x, y) => editDistance(key, x) - editDistance(key, y));
    throw new ConfigError(`${path}${key}`, `is not a Floodgate option${close[0] ? `; did you mean \`${close[0]}\`?` : ''} (known: ${known.join(', ')})`);
  }
}

function oneOf<T extends string>(value: unknown, option: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(option, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}; got ${describeValue(value)}`);
}

function pattern(value: unknown, option: string, re: RegExp, shape: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && re.test(value)) return value;
  throw new ConfigError(option, `must match ${shape}; got ${describeValue(value)}`);
}

function fn<T>(value: unknown, option: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value as T;
  throw new ConfigError(option, `must be a function; got ${describeValue(value)}`);
}

const DEFAULT_BLOCK_CACHE_MAX = 10_000;

function resolveBlockCache(value: unknown): number {
  if (value === undefined) return DEFAULT_BLOCK_CACHE_MAX;
  if (value === false) return 0;
  if (typeof value === 'object' && value !== null) {
    assertKnownOptions(value, ['max'], 'blockCache.');
    const max = (value as { max?: unknown }).max;
    if (typeof max === 'number' && Number.isInteger(max) && max >= 1 && max <= 10_000_000) return max;
    throw new ConfigError('blockCache.max', `must be an integer from 1 to 10000000; got ${describeValue(max)}`);
  }
  throw new ConfigError('blockCache', `must be { max } or false; got ${describeValue(value)}`);
}

function resolveCluster(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError('cluster', `must be an object such as { colocate: true }; got ${describeValue(value)}`);
  }
  assertKnownOptions(value, ['colocate'], 'cluster.');
  const colocate = (value as { colocate?: unknown }).colocate ?? false;
  if (typeof colocate !== 'boolean') throw new ConfigError('cluster.colocate', `must be true or false; got ${describeValue(colocate)}`);
  return colocate;
}

const defaultLogger: Logger = {
  warn: (message) => process.emitWarning(message, { code: 'FLOODGATE' }),
};

/** Validates and resolves limiter options once, at construction: nothing is parsed per request. */
export function resolveOptions(input: LimiterOptions, extraKeys: readonly string[] = []): ResolvedOptions {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError('options', `must be an object with at least \`limits\`; got ${describeValue(input)}`);
  }
  assertKnownOptions(input, [...LIMITER_OPTION_KEYS, ...extraKeys]);
  const redis = input.redis;
  if (redis !== undefined && (typeof redis !== 'object' || redis === null || typeof redis.defineCommand !== 'function')) {
    throw new ConfigError('redis', `must be an ioredis Redis or Cluster client; got ${describeValue(redis)}`);
  }
  const algorithmName = oneOf(input.algorithm, 'algorithm', Object.keys(ALGORITHMS) as AlgorithmName[], 'sliding-window');
  const timeoutMs = input.timeoutMs ?? 250;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > 60_000) {
    throw new ConfigError('timeoutMs', `must be a positive integer of milliseconds up to 60000; got ${describeValue(timeoutMs)}`);
  }
  if (input.penalty !== undefined && typeof input.penalty !== 'boolean') {
    throw new ConfigError('penalty', `must be true or false; got ${describeValue(input.penalty)}`);
  }
  const logger = input.logger ?? defaultLogger;
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function') {
    throw new ConfigError('logger', `must be an object with a warn(message) method; got ${describeValue(logger)}`);
  }
  const colocate = resolveCluster(input.cluster);
  const algorithm = ALGORITHMS[algorithmName];
  const rules = resolveRules(input.limits);
  rules.forEach((rule, i) => algorithm.validate?.(rule, `limits[${i}]`));
  return {
    redis,
    name: pattern(input.name, 'name', /^[A-Za-z0-9_.-]{1,48}$/, '[A-Za-z0-9_.-]{1,48}', 'default'),
    prefix: pattern(input.prefix, 'prefix', /^[A-Za-z0-9_.-]{1,32}$/, '[A-Za-z0-9_.-]{1,32}', 'floodgate'),
    algorithm,
    rules,
    failure: oneOf(input.failure, 'failure', ['open', 'closed', 'local'] as const, 'open'),
    timeoutMs,
    mode: oneOf(input.mode, 'mode', ['enforce', 'shadow'] as const, 'enforce'),
    penalty: input.penalty ?? false,
    blockCacheMax: resolveBlockCache(input.blockCache),
    colocate,
    onEvent: fn(input.onEvent, 'onEvent'),
    logger,
    clock: fn(input.clock, 'clock'),
  };
}
