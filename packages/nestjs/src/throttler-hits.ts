import type { Decision, Limiter } from '@floodgate/core/adapter';

/** What @nestjs/throttler's `ThrottlerStorage.increment()` answers (its `ThrottlerStorageRecord`). */
export interface ThrottlerStorageRecord {
  /**
   * Hits counted for the key: admitted, the count this hit made; refused without a block, the limit + 1;
   * blocked, the hits of the count that crossed the limit (the crossing one included) still within their `ttl`.
   */
  totalHits: number;
  /** Seconds until the key's record expires: a `ttl` started by a hit when none was running (throttler's own). */
  timeToExpire: number;
  /** Whether this hit is refused: the key was at its limit, or it is blocked. */
  isBlocked: boolean;
  /** Refused: seconds until a hit can be admitted again (the block's end, or the oldest hit's). 0 when admitted. */
  timeToBlockExpire: number;
}

/*
 * @nestjs/throttler's in-memory storage, as version 6.7.1 answers (docs/nestjs.md), on Floodgate limiters,
 * so that the counts live in Redis. Per key, throttler keeps the times of its hits (each counts for `ttl`),
 * a block, and a record window. Here:
 *
 *   `count:<key>`  the hits that count toward the limit: rule { limit, window: ttl }, a sliding log. A hit
 *                  is admitted (and counted) only while fewer than `limit` are within their ttl, in one
 *                  atomic check: at the limit it is refused and nothing is counted or reset.
 *   `hits:<key>`   with a blockDuration: the same hits again (rule { limit + 1, window: ttl }, in the same
 *                  check), which a block answers with. When a hit crosses the limit, `count:<key>` is
 *                  blocked for blockDuration (block()) and then emptied, so that the count starts from zero
 *                  when the block ends, as throttler's does; `hits:<key>` keeps the count's hits (the
 *                  crossing one, refused, is not in it: blockedHits() adds it while within its ttl), and
 *                  is emptied by the first hit after the block (restart()).
 *   `record:<key>` throttler's record window (`timeToExpire`): a sliding log of limit 1 and window ttl in a
 *                  limiter of its own, admitted (a window starts) only when no window is running.
 */

/** The limiters of one throttler shape (throttler name, ttl, limit); made by the storage. */
export interface ThrottlerLimiters {
  readonly ttl: number;
  readonly limit: number;
  /** Rules `count` (limit) and, when `held`, `hits` (limit + 1); with the storage's events and block cache. */
  readonly main: Limiter;
  /** The same name and rules (the same counts), without events or block cache: the storage's own reads and repairs. */
  readonly quiet: Limiter;
  /** Whether the rules have `hits`: false when the algorithm takes no limit + 1 (a blockDuration is then refused). */
  readonly held: boolean;
  /** `record:<key>`: sliding log, limit 1, window ttl, no events. */
  readonly record: Limiter;
}

const COUNT = 'count:';
const HITS = 'hits:';
const RECORD = 'record:';

/** Whole seconds, rounded up as throttler rounds them. */
const seconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));

/** The hits an identifier's pair holds within their window (after this check, when it counted), if the store said. */
function liveHits(decision: Decision, identifier: string): number | undefined {
  const state = decision.states.find((s) => s.identifier === identifier);
  return state === undefined ? undefined : state.limit - state.remaining;
}

type Answer = Omit<ThrottlerStorageRecord, 'timeToExpire'>;

const admitted = (totalHits: number): Answer => ({ totalHits, isBlocked: false, timeToBlockExpire: 0 });
const refused = (totalHits: number, retryMs: number): Answer => ({ totalHits, isBlocked: true, timeToBlockExpire: seconds(retryMs) });

/** One hit of `key` (a blockDuration of `blockMs`, 0 for none), answered as throttler's storage answers it. */
export async function hit(l: ThrottlerLimiters, key: string, blockMs: number): Promise<ThrottlerStorageRecord> {
  const [timeToExpire, answer] = await Promise.all([recordWindow(l, key), blockMs > 0 ? withBlock(l, key, blockMs) : withoutBlock(l, key)]);
  return { ...answer, timeToExpire };
}

/** Seconds the key's record window has left, after starting one if none was running (throttler's `timeToExpire`). */
async function recordWindow(l: ThrottlerLimiters, key: string): Promise<number> {
  // A peek first: a running window is a denial of this limit-1 log, and a peek's denial is no denial of anyone.
  let decision = await l.record.peek(RECORD + key);
  if (decision.allowed) decision = await l.record.check(RECORD + key);
  return decision.reason === 'limit' ? seconds(decision.retryAfterMs) : seconds(l.ttl);
}

/**
 * blockDuration 0: the hits within their ttl are counted up to the limit; a hit at the limit is refused
 * (totalHits limit + 1) until the oldest leaves its ttl, and counts nothing.
 */
async function withoutBlock(l: ThrottlerLimiters, key: string): Promise<Answer> {
  const count = COUNT + key;
  const decision = await l.main.check(count);
  if (decision.allowed) return admitted(liveHits(decision, count) ?? 0);
  // At the limit (or blocked by a hit of this key with a blockDuration, or Redis unreachable under 'closed').
  return refused(l.limit + 1, decision.retryAfterMs);
}

/**
 * A blockDuration: the hit that crosses the limit is refused and blocks the key for blockDuration,
 * counting nothing meanwhile; the first hit after the block counts from zero.
 */
async function withBlock(l: ThrottlerLimiters, key: string, blockMs: number): Promise<Answer> {
  const count = COUNT + key;
  const hits = HITS + key;
  // Twice at most: a `hits` log left full by a block (only when hits race at its end) is emptied, then asked again.
  for (let attempt = 0; ; attempt++) {
    const decision = await l.main.check([count, hits]);
    if (decision.allowed) {
      const n = liveHits(decision, count) ?? 0;
      // The first hit of a count: `hits` starts again with it (it may still hold the hits of the last block).
      const held = liveHits(decision, hits);
      if (n === 1 && held !== undefined && held !== 1) await restart(l, hits);
      return admitted(n);
    }
    if (decision.reason === 'blocked') return refused(await blockedHits(l, decision, hits, blockMs), decision.retryAfterMs);
    if (decision.reason !== 'limit') return refused(l.limit + 1, decision.retryAfterMs);
    if (decision.identifier === hits) {
      if (attempt > 0 || !(await quietly(() => l.quiet.reset(hits)))) return refused(l.limit + 1, decision.retryAfterMs);
      continue;
    }
    // This hit crosses the limit. The block first, so that nothing is admitted between the two calls; then
    // the count is emptied, so that it starts from zero when the block ends. `hits` keeps the hits it had.
    // Should Redis fail in between, the hit is refused all the same: without the block the count stays
    // full (the next hit crosses again), without the reset it stays full past the block: never more admitted.
    if (await quietly(() => l.quiet.block(count, { duration: blockMs, reason: 'throttler' }))) await quietly(() => l.quiet.reset(count));
    return refused(l.limit + 1, blockMs);
  }
}

/** Runs one of the storage's own writes (block, reset): whether Redis took it. A failure changes no answer. */
async function quietly(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch {
    return false;
  }
}

/** `hits` holds only the hit just counted (`count`'s first). */
async function restart(l: ThrottlerLimiters, hits: string): Promise<void> {
  if (await quietly(() => l.quiet.reset(hits))) await l.quiet.check(hits);
}

/**
 * What a blocked hit reports, as throttler does: the hits of the count that crossed the limit still within
 * their ttl (`hits`), and the crossing hit itself, made when the block started (`blockMs` before it ends).
 */
async function blockedHits(l: ThrottlerLimiters, decision: Decision, hits: string, blockMs: number): Promise<number> {
  // A block the block cache answered carries no counts: `hits` is read (it is not blocked, only `count` is).
  const held = liveHits(decision, hits) ?? liveHits(await l.quiet.peek(hits), hits);
  const crossing = decision.retryAfterMs + l.ttl > blockMs ? 1 : 0;
  return (held ?? l.limit) + crossing;
}
