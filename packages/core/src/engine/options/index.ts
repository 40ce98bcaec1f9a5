import type { Algorithm, AlgorithmName } from '../../scripts/types';
import { ALGORITHMS } from '../../scripts/algorithms';
import { ConfigError, describeValue } from '../../kernel/errors';
import type { Rule, RuleInput } from '../../config/rules';
import type { LockoutSpec } from '../../scripts/lockout';
import { DEFAULT_PREFIX } from '../../scripts/keys';
import { assertClient, type RedisClient } from '../../stores/clients';
import { Lists } from '../lists';
import { type Logger, safeLogger } from '../../kernel/logger';
import { ownOptions, assertKnownOptions } from '../../config/own-options';
import { checkOptions, optionNames, type OptionTable } from '../../config/option-table';
import { checkBoolean, checkFunction, oneOfCheck, pattern } from '../../config/validate';
import type { FailurePolicy } from '../../config/failure-policy';
import { realRuntime, type Runtime } from '../../kernel/runtime';
import { resolveLockout, type LockoutOptions } from './lockout';
import { MAX_TIMEOUT_MS, defaultTimeoutMs } from './default-timeout';
import { listKinds, resolvePlans, type Plan } from './plans';
import { resolveBlockCache, resolveCluster, resolveEventOptions, resolveMemory, resolveOverrides, type OverridesOptions } from './nested';

export type { LockoutOptions } from './lockout';
export type { Plan } from './plans';

export type LimiterMode = 'enforce' | 'shadow';

import type { LimiterEvent } from '../events';
export type { LimiterEvent } from '../events';

export interface LimiterOptions {
  /**
   * A Redis client, single or Cluster (docs/clients.md): an ioredis or iovalkey `Redis`/`Cluster`, a node-redis
   * (v5+) client or cluster, a Valkey GLIDE client or cluster client, or any other wrapped with defineClient().
   * Omitted: the in-memory store (then `failure`, `timeoutMs` and `cluster` are a ConfigError: only Redis reads
   * them). Floodgate never connects (node-redis: call connect()) nor closes it.
   */
  redis?: RedisClient;
  /** Part of every key; [A-Za-z0-9_.-]{1,48}. Default 'default'. */
  name?: string;
  /** Key namespace; [A-Za-z0-9_.-]{1,32}. Default 'floodgate'. */
  prefix?: string;
  algorithm?: AlgorithmName;
  /**
   * The rules: one, a list, or named plans of them (`{ free: [...], pro: [...] }`), one of which each
   * check picks (`check(ids, { plan })`; the first is the default).
   */
  limits: RuleInput | RuleInput[] | Record<string, RuleInput | RuleInput[]>;
  /**
   * What a check answers when the store cannot: 'open' (default: allow, up to each rule's limit per identifier
   * and process), 'closed' (deny), 'local' (an in-memory limiter of the same rules). Needs `redis`.
   */
  failure?: FailurePolicy;
  /** The limiter's own deadline for one call to the store, in ms. Default 250. */
  timeoutMs?: number;
  /** 'shadow' counts and reports would-be denials (onEvent) but allows everything. */
  mode?: LimiterMode;
  /** Denied checks consume too (a client that keeps hammering stays limited). Default false. */
  penalty?: boolean;
  /**
   * Escalating lockouts: after `after` denials within `within`, the identifier is blocked for `duration`,
   * then `duration x backoff` for the next lockout, up to `maxDuration` (docs/lockouts.md).
   */
  lockout?: LockoutOptions;
  /**
   * Makes limiter.refund(decision) possible: the script then answers, with each admitted check, what it
   * consumed where (a receipt per identifier, a few bytes). Default false; the adapters turn it on for
   * their own limiter when skipSuccessfulRequests, skipFailedRequests or requestWasSuccessful is set.
   */
  refunds?: boolean;
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
  /**
   * The in-memory store and the `failure: 'local'` fallback keep at most `maxKeys` identifiers' state each
   * (default 100,000); the least recently used is forgotten first, which can only under-limit it.
   */
  memory?: { maxKeys?: number };
  /**
   * Never limited (no store call, no rate-limit headers): IP addresses, CIDR ranges (IPv4 and IPv6) and
   * identifiers such as `'user:admin'`. Compiled at construction; replace with limiter.setLists() (docs/lists.md).
   */
  allow?: readonly string[];
  /** Always refused, without a store call (403 in the adapters): the same kinds of entries. Wins over `allow`. */
  deny?: readonly string[];
  /**
   * Identifier kinds (the part before the first ':') that `allow` and `deny` entries and `lockout.scope`
   * may name besides `ip`, `user` and the kinds a rule is `for`: those your identify() or check() calls
   * give, such as `['tenant', 'api-key']`. Any other kind is a ConfigError (docs/lists.md).
   */
  identifierKinds?: readonly string[];
  /**
   * Per-identifier overrides kept in Redis (or, without `redis`, in this process): a plan or rules of their
   * own for one identifier, set at run time with limiter.overrides.set() or `floodgate override`
   * (docs/overrides.md). `true`, or `{ refreshMs }`: how often the limiter asks Redis whether they changed
   * (default 1000). Default off: a limiter without it reads nothing.
   */
  overrides?: boolean | OverridesOptions;
  /** Every decision, refund, store error and shadow denial (events.ts); see also limiter.subscribe(). */
  onEvent?: (event: LimiterEvent) => void;
  /** `{ identifiers: true }`: events carry the identifier itself, not only its kind. Default false. */
  events?: { identifiers?: boolean };
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
  /** The default plan's rules (the only plan's, when `limits` names none). */
  readonly rules: readonly Rule[];
  /** Every plan, the default first; one unnamed plan ('') when `limits` names none. */
  readonly plans: readonly Plan[];
  readonly failure: FailurePolicy;
  readonly timeoutMs: number;
  readonly mode: LimiterMode;
  readonly penalty: boolean;
  readonly refunds: boolean;
  readonly lockout: LockoutSpec | undefined;
  /** The allow and deny lists as compiled at construction. */
  readonly lists: Lists;
  /** Entries in the block cache; 0 when it is off. */
  readonly blockCacheMax: number;
  readonly colocate: boolean;
  readonly onEvent: ((event: LimiterEvent) => void) | undefined;
  readonly eventIdentifiers: boolean;
  /** Never throws (see safeLogger). */
  readonly logger: Logger;
  readonly clock: (() => number) | undefined;
  /** With `overrides` on: how often (ms) the limiter asks Redis whether they changed; undefined when off. */
  readonly overridesRefreshMs: number | undefined;
  /** Identifiers one in-memory store keeps (the memory store, the `local` fallback). */
  readonly memoryMaxKeys: number;
  /** Operational time (kernel/runtime.ts): the real runtime, unless a test's limiter was given another. */
  readonly runtime: Runtime;
}

/**
 * What a limiter is built on besides its options (engine/testing.ts, for Floodgate's own tests): a runtime
 * other than the real one, and whether a store of the test's own stands in for `redis` (then the options
 * only a Redis store reads are taken without a client).
 */
export interface Seam {
  readonly runtime?: Runtime;
  readonly remote?: boolean;
}

const PREFIX = /^[A-Za-z0-9_.-]{1,32}$/;

/**
 * `prefix`: one segment of every key, before the ':' Floodgate writes itself (docs/design.md, section 7).
 * Without ':' in it, an ACL's `~<prefix>:*` and the command line's `--prefix` reach this prefix's keys and
 * no other prefix's (`app` would otherwise cover `app:eu`). The peers' own prefixes end in their separator
 * (`'rl:'`, `'my-namespace:'`): the message names the prefix that gives the same start of key.
 */
function prefixOf(value: unknown): string {
  if (typeof value === 'string' && value.includes(':')) {
    const segment = value.replace(/:+$/, '').replace(/:/g, '.');
    if (PREFIX.test(segment)) {
      throw new ConfigError(
        'prefix',
        `must match [A-Za-z0-9_.-]{1,32}; got ${describeValue(value)}: Floodgate writes the ':' after the prefix itself, so prefix '${segment}' gives keys that start '${segment}:'`,
      );
    }
  }
  return pattern(value, 'prefix', PREFIX, '[A-Za-z0-9_.-]{1,32}', DEFAULT_PREFIX);
}

const NAME = /^[A-Za-z0-9_.-]{1,48}$/;
const MODES: readonly LimiterMode[] = ['enforce', 'shadow'];
const FAILURE_POLICIES: readonly FailurePolicy[] = ['open', 'closed', 'local'];

function checkTimeout(value: unknown, option: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > MAX_TIMEOUT_MS) {
    throw new ConfigError(option, `must be a positive integer of milliseconds up to ${MAX_TIMEOUT_MS}; got ${describeValue(value)}`);
  }
}

function checkLogger(value: unknown, option: string): void {
  if (typeof value !== 'object' || value === null || typeof (value as Logger).warn !== 'function') {
    throw new ConfigError(option, `must be an object with a warn(message) method; got ${describeValue(value)}`);
  }
}

/**
 * Options that only a Redis store reads (`redisOnly` in the table). Without `redis` a limiter keeps its
 * counts in this process (the in-memory store, which cannot fail or time out), so one of these beside no
 * client is a configuration that would be silently ignored: most often a `redis` left undefined by a
 * missing environment variable.
 */
function assertNoRedisOnlyOptions(input: LimiterOptions): void {
  for (const option of LIMITER_OPTION_KEYS) {
    if (LIMITER_OPTIONS[option].redisOnly !== true || input[option] === undefined) continue;
    throw new ConfigError(
      option,
      `applies to a Redis store, and this limiter has no \`redis\` client: it would count in this process only (the in-memory store) and ignore it. Pass a Redis client as \`redis\` (is it undefined?), or remove \`${option}\``,
    );
  }
}

/** A limiter's options, declared once (config/option-table.ts): what checks each, whether a route inherits it. */
export const LIMITER_OPTIONS: OptionTable<LimiterOptions> = {
  redis: { check: assertClient, inherited: true },
  name: { check: (value, option) => pattern(value, option, NAME, '[A-Za-z0-9_.-]{1,48}', '') },
  prefix: { check: (value) => prefixOf(value), inherited: true },
  algorithm: { check: oneOfCheck(Object.keys(ALGORITHMS)), inherited: true },
  limits: {},
  failure: { check: oneOfCheck(FAILURE_POLICIES), inherited: true, redisOnly: true },
  timeoutMs: { check: checkTimeout, inherited: true, redisOnly: true },
  mode: { check: oneOfCheck(MODES), inherited: true },
  penalty: { check: checkBoolean, inherited: true },
  refunds: { check: checkBoolean },
  lockout: {},
  allow: {},
  deny: {},
  identifierKinds: {},
  onEvent: { check: checkFunction, inherited: true },
  events: { check: resolveEventOptions, inherited: true },
  logger: { check: checkLogger, inherited: true },
  clock: { check: checkFunction, inherited: true },
  blockCache: { check: resolveBlockCache, inherited: true },
  cluster: { check: resolveCluster, inherited: true, redisOnly: true },
  memory: { check: resolveMemory, inherited: true },
  overrides: { check: resolveOverrides },
};

/** The names of a limiter's options, in declaration order. */
export const LIMITER_OPTION_KEYS = optionNames(LIMITER_OPTIONS);

/** Validates and resolves limiter options once, at construction: nothing is parsed per request. */
export function resolveOptions(input: LimiterOptions, extraKeys: readonly string[] = [], seam: Seam = {}): ResolvedOptions {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError('options', `must be an object with at least \`limits\`; got ${describeValue(input)}`);
  }
  assertKnownOptions(input, [...LIMITER_OPTION_KEYS, ...extraKeys]);
  input = ownOptions(input);
  checkOptions(LIMITER_OPTIONS, input);
  const redis = input.redis;
  if (redis === undefined && seam.remote !== true) assertNoRedisOnlyOptions(input);
  const logger = input.logger;
  const algorithm = ALGORITHMS[input.algorithm ?? 'sliding-window'];
  const plans = resolvePlans(input.limits, algorithm);
  const rules = plans[0]!.rules;
  const kinds = listKinds(plans, input.identifierKinds);
  return {
    redis,
    name: input.name ?? 'default',
    prefix: prefixOf(input.prefix),
    algorithm,
    rules,
    plans,
    failure: input.failure ?? 'open',
    timeoutMs: input.timeoutMs ?? defaultTimeoutMs(),
    mode: input.mode ?? 'enforce',
    penalty: input.penalty ?? false,
    refunds: input.refunds ?? false,
    lockout: resolveLockout(input.lockout, plans, kinds),
    lists: Lists.compile(input.allow, input.deny, kinds),
    blockCacheMax: resolveBlockCache(input.blockCache),
    colocate: resolveCluster(input.cluster),
    onEvent: input.onEvent,
    eventIdentifiers: resolveEventOptions(input.events),
    logger: safeLogger(logger),
    memoryMaxKeys: resolveMemory(input.memory),
    clock: input.clock,
    overridesRefreshMs: resolveOverrides(input.overrides),
    runtime: seam.runtime ?? realRuntime,
  };
}
