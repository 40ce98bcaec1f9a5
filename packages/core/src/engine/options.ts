import type { Algorithm, AlgorithmName } from '../scripts/types';
import { ALGORITHMS } from '../scripts/algorithms';
import { ConfigError, describeValue } from '../kernel/errors';
import { BUILT_IN_KINDS } from '../config/list-entry';
import { KIND, parseDuration, resolveRules, type Rule, type RuleInput } from '../config/rules';
import type { LockoutSpec } from '../scripts/lockout';
import { DEFAULT_PREFIX } from '../scripts/keys';
import { assertClient, type RedisClient } from '../stores/clients';
import { Lists } from './lists';
import { type Logger, safeLogger } from '../kernel/logger';
import { ownOptions, assertKnownOptions } from '../config/own-options';
import type { FailurePolicy } from '../config/failure-policy';
import { DEFAULT_MEMORY_MAX_KEYS } from '../stores/memory';

export type LimiterMode = 'enforce' | 'shadow';

import type { LimiterEvent } from './events';
export type { LimiterEvent } from './events';

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

export interface LockoutOptions {
  /** Denials (within `within`) that lock an identifier out: a positive integer. */
  after: number;
  /** The window the denials are counted in: ms or a duration string. */
  within: number | string;
  /** The first lockout's length: ms or a duration string. */
  duration: number | string;
  /** Each further lockout lasts this many times the one before (1 to 100). Default 1: no escalation. */
  backoff?: number;
  /**
   * The longest lockout (default: `duration` without backoff, else 24 hours or `duration` if longer). The
   * escalation is forgotten once an identifier has gone this long past its last lockout.
   */
  maxDuration?: number | string;
  /**
   * Required: the identifier kinds a lockout may lock (`'ip'`, or `['ip', 'login']`); identifiers of other
   * kinds are limited by their rules but never locked out. Never name a kind any client can claim without
   * proving it owns it (an account name at a login): whoever names it would lock its owner out. For
   * logins, lock the client and the (client, account) pair: `['ip', 'login']` with identifiers
   * `ip:<address>` and `login:<ip identifier>|<account>` (docs/lockouts.md, "What a lockout locks").
   */
  scope: string | readonly string[];
}

/** A named rule set of `limits: { free: [...], pro: [...] }`. */
export interface Plan {
  readonly name: string;
  readonly rules: readonly Rule[];
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
  /** Identifiers one in-memory store keeps (the memory store, the `local` fallback). */
  readonly memoryMaxKeys: number;
}

export const LIMITER_OPTION_KEYS = [
  'redis',
  'name',
  'prefix',
  'algorithm',
  'limits',
  'failure',
  'timeoutMs',
  'mode',
  'penalty',
  'refunds',
  'lockout',
  'allow',
  'deny',
  'identifierKinds',
  'onEvent',
  'events',
  'logger',
  'clock',
  'blockCache',
  'cluster',
  'memory',
] as const;

const RULE_OPTION_ALGORITHM = { burst: 'token-bucket', precision: 'sliding-window' } as const;

/** A rule option the algorithm ignores would be a silent no-op: `precision` on fixed-window is a mistake. */
function assertRuleOptions(limits: unknown, algorithm: Algorithm, path: string): void {
  const list: unknown[] = Array.isArray(limits) ? limits : [limits];
  list.forEach((rule, i) => {
    for (const option of ['burst', 'precision'] as const) {
      if (typeof rule === 'object' && rule !== null && Object.hasOwn(rule, option) && !algorithm.ruleOptions.includes(option)) {
        throw new ConfigError(
          `${path}[${i}].${option}`,
          `applies only to algorithm '${RULE_OPTION_ALGORITHM[option]}'; this limiter's algorithm is '${algorithm.name}'`,
        );
      }
    }
  });
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
    const max = ownOptions(value as { max?: unknown }).max;
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
  const colocate = ownOptions(value as { colocate?: unknown }).colocate ?? false;
  if (typeof colocate !== 'boolean') throw new ConfigError('cluster.colocate', `must be true or false; got ${describeValue(colocate)}`);
  return colocate;
}

function resolveMemory(value: unknown): number {
  if (value === undefined) return DEFAULT_MEMORY_MAX_KEYS;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError('memory', `must be an object such as { maxKeys: 100000 }; got ${describeValue(value)}`);
  }
  assertKnownOptions(value, ['maxKeys'], 'memory.');
  const max = ownOptions(value as { maxKeys?: unknown }).maxKeys ?? DEFAULT_MEMORY_MAX_KEYS;
  if (typeof max === 'number' && Number.isInteger(max) && max >= 1 && max <= 100_000_000) return max;
  throw new ConfigError('memory.maxKeys', `must be an integer from 1 to 100000000; got ${describeValue(max)}`);
}

function resolveEventOptions(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError('events', `must be an object such as { identifiers: true }; got ${describeValue(value)}`);
  }
  assertKnownOptions(value, ['identifiers'], 'events.');
  const identifiers = ownOptions(value as { identifiers?: unknown }).identifiers ?? false;
  if (typeof identifiers !== 'boolean')
    throw new ConfigError('events.identifiers', `must be true or false; got ${describeValue(identifiers)}`);
  return identifiers;
}

const DAY_MS = 86_400_000;

/** At most this many kinds in `lockout.scope` (as many as a limiter has rules). */
const MAX_SCOPE_KINDS = 32;

/**
 * `lockout.scope`: the kinds a lockout may lock, each a kind the limiter knows (`known`: built in, a rule's
 * `for`, or `identifierKinds`) and one some rule of some plan applies to (a kind no rule applies to is never
 * denied by its own rules, so never locked: a typo). Required, because a lockout of everything a check
 * names hands anyone who can name an account a way to lock its owner out (docs/security.md, "Lockouts as a
 * lever against someone else").
 */
function resolveLockoutScope(value: unknown, plans: readonly Plan[], known: ReadonlySet<string>): readonly string[] {
  if (value === undefined) {
    throw new ConfigError(
      'lockout.scope',
      "is required: the identifier kinds a lockout may lock, such as ['ip'], or for logins ['ip', 'login'] with " +
        '`login:<ip identifier>|<account>` identifiers (docs/lockouts.md). A kind any client can name without owning it ' +
        "(an account at a login, such as 'user') lets whoever names it lock its owner out: name one only if that is what you want",
    );
  }
  const list: unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  if (list.length === 0 || list.length > MAX_SCOPE_KINDS) {
    throw new ConfigError(
      'lockout.scope',
      `must be an identifier kind or a list of 1 to ${MAX_SCOPE_KINDS} of them, such as ['ip', 'login']; got ${describeValue(value)}`,
    );
  }
  const rules = plans.flatMap((p) => p.rules);
  const anyKind = rules.some((r) => r.for === undefined);
  const ruleKinds = [...new Set(rules.map((r) => r.for))];
  for (const kind of list) {
    if (typeof kind !== 'string' || !KIND.test(kind)) {
      throw new ConfigError(
        'lockout.scope',
        `must list identifier kinds such as 'ip' or 'login' ([A-Za-z0-9_-]{1,32}, the part of an identifier before its first ':'); got ${describeValue(kind)}`,
      );
    }
    if (!known.has(kind)) {
      throw new ConfigError(
        'lockout.scope',
        `names '${kind}', a kind no identifier of this limiter has (known kinds: ${[...known].join(', ')}; declare others in \`identifierKinds\`, or scope a rule to them with \`for\`)`,
      );
    }
    if (!anyKind && !ruleKinds.includes(kind)) {
      throw new ConfigError(
        'lockout.scope',
        `names '${kind}', a kind no rule applies to (the rules are for ${ruleKinds.map((k) => `'${k}'`).join(', ')}): its identifiers are never denied by their own rules, so never locked out`,
      );
    }
  }
  return [...new Set(list as string[])];
}

function resolveLockout(value: unknown, plans: readonly Plan[], known: ReadonlySet<string>): LockoutSpec | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError(
      'lockout',
      `must be an object such as { after: 5, within: '15m', duration: '1h', scope: ['ip'] }; got ${describeValue(value)}`,
    );
  }
  assertKnownOptions(value, ['after', 'within', 'duration', 'backoff', 'maxDuration', 'scope'], 'lockout.');
  const o = ownOptions(value as LockoutOptions);
  const after = o.after;
  if (typeof after !== 'number' || !Number.isInteger(after) || after < 1 || after > 1_000_000) {
    throw new ConfigError('lockout.after', `must be an integer from 1 to 1000000; got ${describeValue(after)}`);
  }
  const withinMs = parseDuration(o.within, 'lockout.within');
  const durationMs = parseDuration(o.duration, 'lockout.duration');
  const backoff = o.backoff ?? 1;
  if (typeof backoff !== 'number' || !Number.isFinite(backoff) || backoff < 1 || backoff > 100) {
    throw new ConfigError('lockout.backoff', `must be a number from 1 to 100; got ${describeValue(backoff)}`);
  }
  const fallback = backoff === 1 ? durationMs : Math.max(DAY_MS, durationMs);
  const maxDurationMs = o.maxDuration === undefined ? fallback : parseDuration(o.maxDuration, 'lockout.maxDuration');
  if (maxDurationMs < durationMs) {
    throw new ConfigError('lockout.maxDuration', `must be at least lockout.duration (${durationMs} ms); got ${maxDurationMs} ms`);
  }
  return { after, withinMs, durationMs, backoff, maxDurationMs, scope: resolveLockoutScope(o.scope, plans, known) };
}

const PLAN_NAME = /^[A-Za-z0-9_.-]{1,48}$/;
const MAX_PLANS = 64;

/** Whether `limits` names plans: an object (not a rule, not a list) whose every value is a rule or a list. */
function namesPlans(limits: unknown): limits is Record<string, unknown> {
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) return false;
  const values = Object.values(limits);
  return (
    values.length > 0 && !Object.hasOwn(limits, 'limit') && values.every((v) => Array.isArray(v) || (typeof v === 'object' && v !== null))
  );
}

/** `limits` as plans: named ones, or a single unnamed one. Each plan's rules are validated for the algorithm. */
function resolvePlans(limits: unknown, algorithm: Algorithm): Plan[] {
  const named = namesPlans(limits);
  const entries: [string, unknown][] = named ? Object.entries(limits) : [['', limits]];
  if (entries.length > MAX_PLANS) throw new ConfigError('limits', `names at most ${MAX_PLANS} plans; got ${entries.length}`);
  return entries.map(([name, value]) => {
    if (named && !PLAN_NAME.test(name)) {
      throw new ConfigError(`limits.${name}`, `is not a plan name: plan names match [A-Za-z0-9_.-]{1,48}`);
    }
    const path = named ? `limits.${name}` : 'limits';
    const rules = resolveRules(value, path);
    assertRuleOptions(value, algorithm, path);
    rules.forEach((rule, i) => algorithm.validate?.(rule, `${path}[${i}]`));
    return { name, rules };
  });
}

/**
 * Options that only a Redis store reads. Without `redis` a limiter keeps its counts in this process (the
 * in-memory store, which cannot fail or time out), so one of these beside no client is a configuration that
 * would be silently ignored: most often a `redis` left undefined by a missing environment variable.
 */
const REDIS_ONLY = ['failure', 'timeoutMs', 'cluster'] as const;

function assertNoRedisOnlyOptions(input: LimiterOptions): void {
  for (const option of REDIS_ONLY) {
    if (input[option] === undefined) continue;
    throw new ConfigError(
      option,
      `applies to a Redis store, and this limiter has no \`redis\` client: it would count in this process only (the in-memory store) and ignore it. Pass a Redis client as \`redis\` (is it undefined?), or remove \`${option}\``,
    );
  }
}

/** The kinds a list entry or `lockout.scope` may name: the built-in ones, every rule's `for`, and `identifierKinds`. */
function listKinds(plans: readonly Plan[], declared: unknown): ReadonlySet<string> {
  const kinds = new Set(BUILT_IN_KINDS);
  for (const plan of plans) for (const rule of plan.rules) if (rule.for !== undefined) kinds.add(rule.for);
  if (declared === undefined) return kinds;
  if (!Array.isArray(declared)) {
    throw new ConfigError('identifierKinds', `must be an array of identifier kinds such as ['tenant']; got ${describeValue(declared)}`);
  }
  declared.forEach((kind: unknown, i) => {
    if (typeof kind !== 'string' || !KIND.test(kind)) {
      throw new ConfigError(`identifierKinds[${i}]`, `must be an identifier kind ([A-Za-z0-9_-]{1,32}); got ${describeValue(kind)}`);
    }
    kinds.add(kind);
  });
  return kinds;
}

/** Validates and resolves limiter options once, at construction: nothing is parsed per request. */
export function resolveOptions(input: LimiterOptions, extraKeys: readonly string[] = []): ResolvedOptions {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError('options', `must be an object with at least \`limits\`; got ${describeValue(input)}`);
  }
  assertKnownOptions(input, [...LIMITER_OPTION_KEYS, ...extraKeys]);
  input = ownOptions(input);
  const redis = input.redis;
  if (redis !== undefined) assertClient(redis);
  const algorithmName = oneOf(input.algorithm, 'algorithm', Object.keys(ALGORITHMS) as AlgorithmName[], 'sliding-window');
  const timeoutMs = input.timeoutMs ?? 250;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > 60_000) {
    throw new ConfigError('timeoutMs', `must be a positive integer of milliseconds up to 60000; got ${describeValue(timeoutMs)}`);
  }
  if (input.penalty !== undefined && typeof input.penalty !== 'boolean') {
    throw new ConfigError('penalty', `must be true or false; got ${describeValue(input.penalty)}`);
  }
  if (input.refunds !== undefined && typeof input.refunds !== 'boolean') {
    throw new ConfigError('refunds', `must be true or false; got ${describeValue(input.refunds)}`);
  }
  const logger = input.logger;
  if (logger !== undefined && (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function')) {
    throw new ConfigError('logger', `must be an object with a warn(message) method; got ${describeValue(logger)}`);
  }
  const colocate = resolveCluster(input.cluster);
  const failure = oneOf(input.failure, 'failure', ['open', 'closed', 'local'] as const, 'open');
  if (redis === undefined) assertNoRedisOnlyOptions(input);
  const algorithm = ALGORITHMS[algorithmName];
  const plans = resolvePlans(input.limits, algorithm);
  const rules = plans[0]!.rules;
  const kinds = listKinds(plans, input.identifierKinds);
  return {
    redis,
    name: pattern(input.name, 'name', /^[A-Za-z0-9_.-]{1,48}$/, '[A-Za-z0-9_.-]{1,48}', 'default'),
    prefix: prefixOf(input.prefix),
    algorithm,
    rules,
    plans,
    failure,
    timeoutMs,
    mode: oneOf(input.mode, 'mode', ['enforce', 'shadow'] as const, 'enforce'),
    penalty: input.penalty ?? false,
    refunds: input.refunds ?? false,
    lockout: resolveLockout(input.lockout, plans, kinds),
    lists: Lists.compile(input.allow, input.deny, kinds),
    blockCacheMax: resolveBlockCache(input.blockCache),
    colocate,
    onEvent: fn(input.onEvent, 'onEvent'),
    eventIdentifiers: resolveEventOptions(input.events),
    logger: safeLogger(logger),
    memoryMaxKeys: resolveMemory(input.memory),
    clock: fn(input.clock, 'clock'),
  };
}
