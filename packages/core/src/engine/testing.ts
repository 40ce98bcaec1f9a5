import { ArgumentError, describeValue } from '../kernel/errors';
import { parseDuration } from '../config/rules';
import { adapterOf, assertClient, scriptOf, type RedisClient } from '../stores/clients';
import { clearMemoryStores } from '../stores/memory';
import { clearEverywhere } from './block-cache';
import { clearMemoryLeases } from './concurrency/memory-leases';
import type { Runtime } from '../kernel/runtime';
import type { Store } from '../stores/types';
import { resolveOptions, type LimiterOptions } from './options';
import { FloodgateLimiter, type Limiter } from './limiter';

/*
 * What an application's own tests need of Floodgate (docs/testing.md): a clock the test drives, a prefix
 * per test file so counts never leak between files that share a Redis (or a process), and a way to forget
 * everything a prefix holds between tests.
 */

/** A clock a test moves by hand: give `now` as a limiter's `clock` option. */
export interface ManualClock {
  /** The clock's time, in ms since the epoch: `createLimiter({ ..., clock: clock.now })`. */
  readonly now: () => number;
  /** Moves the clock forward by ms or a duration ('1m', '500ms'); returns the new time. */
  advance(by: number | string): number;
  /** Sets the time (ms since the epoch, or a Date); it may go back, as a test needs. */
  set(time: number | Date): number;
}

/** 2030-01-01T00:00:00Z: a fixed start, so a test's windows fall the same way in every run. */
const DEFAULT_START = Date.UTC(2030, 0, 1);

/**
 * A clock that moves only when the test says so. A limiter given it as `clock` takes its time from it
 * instead of Redis's `TIME` (or the wall clock, in memory), its block cache included: advancing past a
 * window frees a denied client at once, with no sleeping. On Redis, keys still expire in real time, so a
 * limiter on a test clock pads every TTL by 10 minutes: never give one to a production limiter.
 */
export function manualClock(start: number | Date = DEFAULT_START): ManualClock {
  let time = toMs(start, 'start');
  return {
    now: () => time,
    advance(by) {
      const ms = typeof by === 'number' && by === 0 ? 0 : parseDuration(by, 'advance');
      time += ms;
      return time;
    },
    set(to) {
      time = toMs(to, 'set');
      return time;
    },
  };
}

function toMs(value: number | Date, what: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new ArgumentError(`manualClock ${what} must be a time in ms since the epoch or a Date; got ${describeValue(value)}`);
  }
  return ms;
}

let made = 0;

/**
 * A prefix no other call in this process, nor another process, returns: one per test file (or per test)
 * keeps its limits from leaking into another's on a shared Redis, and into another's memory store in a
 * runner that reuses one process. `label` (letters, digits, `_.-`) starts it, to recognise the keys.
 */
export function testPrefix(label = 'test'): string {
  if (typeof label !== 'string' || !/^[A-Za-z0-9_.-]{1,12}$/.test(label)) {
    throw new ArgumentError(`testPrefix(label): the label must match [A-Za-z0-9_.-]{1,12}; got ${describeValue(label)}`);
  }
  made += 1;
  const random = Math.floor(Math.random() * 36 ** 4).toString(36);
  // At most 12 + 1 + 7 + 1 + 4 + 1 + 4 characters: within a prefix's 32.
  return `${label}-${process.pid.toString(36).slice(-7)}-${made.toString(36).slice(-4)}-${random}`;
}

/** Deletes every key of the pattern, in one script call (single Redis only; a test's keys are few). */
const FORGET_LUA = `
local cursor, n = '0', 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    redis.call('UNLINK', key)
    n = n + 1
  end
until cursor == '0'
return n
`;

/** `*`, `?`, `[`, `]` and `\` are SCAN pattern characters: a prefix never has them, but escape all the same. */
const globEscape = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * Forgets everything Floodgate keeps under `prefix`, for a test that starts afresh: the counts, blocks,
 * lockouts and leases of every limiter with that prefix, in this process (memory stores, block caches) and,
 * given `redis`, in that Redis (every key under `<prefix>:`). Resolves to the number of Redis keys deleted.
 * Redis Cluster is refused: give each test file its own prefix (testPrefix()) there instead. Never point it
 * at a production prefix: it deletes what it finds.
 */
export async function resetPrefix(prefix: string, options: { redis?: RedisClient } = {}): Promise<number> {
  if (typeof prefix !== 'string' || !/^[A-Za-z0-9_.-]{1,32}$/.test(prefix)) {
    throw new ArgumentError(`resetPrefix(prefix): a limiter prefix ([A-Za-z0-9_.-]{1,32}); got ${describeValue(prefix)}`);
  }
  clearMemoryStores(prefix);
  clearMemoryLeases(prefix);
  clearEverywhere(prefix);
  const redis = options.redis;
  if (redis === undefined) return 0;
  assertClient(redis);
  const client = adapterOf(redis as object);
  if (client.isCluster) {
    throw new ArgumentError(
      'resetPrefix() takes a single Redis, not a Cluster (its keys are spread over every master): give each test file its own prefix with testPrefix()',
    );
  }
  return Number(await client.evalScript(scriptOf('reset_prefix', FORGET_LUA), [], [`${globEscape(prefix)}:*`]));
}

/**
 * Floodgate's own tests (@internal): a limiter on `runtime` (a virtual one: kernel/virtual-runtime.ts) and,
 * given `store`, on that store in place of the one its options make. A remote store stands in for `redis`:
 * the options only a Redis store reads (`failure`, `timeoutMs`) are taken without a client, and the
 * limiter's guards (units in flight, the block cache, the failure policy) run as they do on Redis.
 */
export function createLimiterOn(options: LimiterOptions, seam: { runtime?: Runtime; store?: Store }): Limiter {
  if (seam.store !== undefined && options.redis !== undefined) {
    throw new ArgumentError('createLimiterOn: give either a store or `redis`, not both');
  }
  return new FloodgateLimiter(resolveOptions(options, [], { runtime: seam.runtime, remote: seam.store?.remote }), seam.store);
}
