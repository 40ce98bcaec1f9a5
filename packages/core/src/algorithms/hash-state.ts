import type { FrameContext, SavedValue } from './types';

/*
 * The save step shared by the algorithms that keep one hash per identifier (fixed window, sliding
 * window, token bucket): write the fields, then a TTL no longer than the longest-lived rule needs,
 * plus the test-mode PAD. In both twins.
 */
export const LUA_HASH_SAVE = `
local function fg_hset(key, args, ttl)
  if #args > 0 then
    redis.call('HSET', key, unpack(args))
    redis.call('PEXPIRE', key, ttl + PAD)
  end
end
`;

/** The JavaScript twin of fg_hset: the value to keep and the TTL, the largest `ttlOf(j)` plus the pad. */
export function savedHash<V>(value: V, js: readonly number[], ttlOf: (j: number) => number, ctx: FrameContext): SavedValue<V> | undefined {
  if (js.length === 0) return undefined;
  let ttl = 0;
  for (const j of js) ttl = Math.max(ttl, ttlOf(j));
  return { value, ttlMs: ttl + ctx.pad };
}
