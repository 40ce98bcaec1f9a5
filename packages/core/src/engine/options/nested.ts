import { ConfigError, describeValue } from '../../kernel/errors';
import { checkBoolean, checkInteger, nested } from '../../config/validate';
import { optionNames } from '../../config/option-table';
import { DEFAULT_MEMORY_MAX_KEYS } from '../../stores/memory';

/* The options that are objects of their own: `blockCache`, `cluster`, `memory`, `events`, `overrides`. */

export interface BlockCacheOptions {
  /** Entries the cache keeps: an integer from 1 to 10,000,000. */
  max: number;
}
export interface ClusterOptions {
  /** Every key of every limiter with this prefix in one hash slot. Default false. */
  colocate?: boolean;
}
export interface MemoryOptions {
  /** Identifiers one in-memory store keeps. Default 100,000. */
  maxKeys?: number;
}
export interface OverridesOptions {
  /** How often (ms) the limiter asks Redis whether the overrides changed: 100 to 3,600,000. Default 1000. */
  refreshMs?: number;
}
export interface EventOptions {
  /** Events carry the identifier itself, not only its kind. Default false. */
  identifiers?: boolean;
}

const DEFAULT_BLOCK_CACHE_MAX = 10_000;

/** `blockCache`: the entries the cache keeps; 0 when it is off. */
export function resolveBlockCache(value: unknown): number {
  if (value === undefined) return DEFAULT_BLOCK_CACHE_MAX;
  if (value === false) return 0;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError('blockCache', `must be { max } or false; got ${describeValue(value)}`);
  }
  const { max } = nested<BlockCacheOptions>(value, 'blockCache', optionNames<BlockCacheOptions>({ max: {} }), '{ max: 10000 }');
  return checkInteger(max, 'blockCache.max', 1, 10_000_000);
}

/** `cluster`: whether keys are colocated in one hash slot. */
export function resolveCluster(value: unknown): boolean {
  if (value === undefined) return false;
  const colocate =
    nested<ClusterOptions>(value, 'cluster', optionNames<ClusterOptions>({ colocate: {} }), '{ colocate: true }').colocate ?? false;
  checkBoolean(colocate, 'cluster.colocate');
  return colocate;
}

/** `memory`: the identifiers one in-memory store keeps. */
export function resolveMemory(value: unknown): number {
  if (value === undefined) return DEFAULT_MEMORY_MAX_KEYS;
  const maxKeys = nested<MemoryOptions>(value, 'memory', optionNames<MemoryOptions>({ maxKeys: {} }), '{ maxKeys: 100000 }').maxKeys;
  return checkInteger(maxKeys ?? DEFAULT_MEMORY_MAX_KEYS, 'memory.maxKeys', 1, 100_000_000);
}

/** `events`: whether events carry identifiers. */
export function resolveEventOptions(value: unknown): boolean {
  if (value === undefined) return false;
  const identifiers =
    nested<EventOptions>(value, 'events', optionNames<EventOptions>({ identifiers: {} }), '{ identifiers: true }').identifiers ?? false;
  checkBoolean(identifiers, 'events.identifiers');
  return identifiers;
}

const DEFAULT_OVERRIDES_REFRESH_MS = 1_000;

/** `overrides`: true or `{ refreshMs }` turns them on (the refresh period in ms); undefined when off. */
export function resolveOverrides(value: unknown): number | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return DEFAULT_OVERRIDES_REFRESH_MS;
  const { refreshMs } = nested<OverridesOptions>(
    value,
    'overrides',
    optionNames<OverridesOptions>({ refreshMs: {} }),
    '{ refreshMs: 1000 }',
  );
  return checkInteger(refreshMs ?? DEFAULT_OVERRIDES_REFRESH_MS, 'overrides.refreshMs', 100, 3_600_000);
}
