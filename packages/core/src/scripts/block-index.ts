import type { FrameStorage } from './types';

/*
 * The block index (docs/design.md, section 7; docs/cli.md, "blocks"): per hash slot, a sorted set of the
 * block keys in force, scored by their end (ms since the epoch). Every script that writes or deletes a block
 * key keeps it in the same call (block(), a lockout, unblock()), so an entry with an end after now exists
 * exactly while its block does. Bounded: every write first trims the entries that have ended, and the key's
 * TTL is the last end (plus the test padding), so it holds at most the blocks in force in its slot and
 * disappears with the last of them.
 */

/**
 * Lua over `xkey` (the index key), `bkey` (the block key), `untilMs` (a Lua expression, or `nil` to remove
 * the entry), with NOW, PAD and `fmt` in scope.
 */
export function indexLua(xkey: string, bkey: string, untilMs: string | undefined): string {
  const write =
    untilMs === undefined ? `redis.call('ZREM', ${xkey}, ${bkey})` : `redis.call('ZADD', ${xkey}, fmt('%d', ${untilMs}), ${bkey})`;
  return `redis.call('ZREMRANGEBYSCORE', ${xkey}, '-inf', fmt('%d', NOW))
${write}
do
  local last = redis.call('ZRANGE', ${xkey}, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIRE', ${xkey}, tonumber(last[2]) - NOW + PAD) end
end`;
}

/** The JavaScript twin of indexLua over a memory store: the index is a Map of block key -> end. */
export function indexTwin(storage: FrameStorage, xkey: string, bkey: string, untilMs: number | undefined, now: number, pad: number): void {
  const stored = storage.get(xkey, now) as ReadonlyMap<string, number> | undefined;
  const index = new Map<string, number>();
  if (stored !== undefined) for (const [member, end] of stored) if (end > now) index.set(member, end);
  if (untilMs === undefined) index.delete(bkey);
  else index.set(bkey, untilMs);
  let last = -Infinity;
  for (const end of index.values()) last = Math.max(last, end);
  // An empty index is no key (Redis drops an empty sorted set): a TTL of 0 expires it now.
  storage.set(xkey, index, index.size === 0 ? 0 : last - now + pad, now);
}
