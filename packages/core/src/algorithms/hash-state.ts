import type { FrameContext, SavedValue } from './types';

/*
 * The save step shared by the algorithms that keep one hash per identifier (fixed window, sliding
 * window, token bucket): write the fields, then a TTL no longer than the longest-lived rule needs,
 * plus the test-mode PAD. In both twins.
 * `kept` (Lua only; nil when unknown): how long the key is already known to live, worked out from the
 * state it was loaded with. Every write leaves the key living at least as long as the state it wrote
 * needs, so when the new state needs no longer, the PEXPIRE is skipped: a fixed window's or a ring's
 * longest rule moves on only once per window or bucket, so most writes are one HSET.
 */
export const LUA_HASH_SAVE = `
local function fg_hset(key, args, ttl, kept)
  if #args > 0 then
    redis.call('HSET', key, unpack(args))
    if kept == nil or ttl > kept then redis.call('PEXPIRE', key, ttl + PAD) end
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

/*
 * Undo receipts of the hash algorithms: one item per distinct field among the consumed rules `js` (two
 * rules sharing a field consumed once), joined by ','. `item` is the Lua body of a function (st, j)
 * returning the field's name and its item text; numbers in the text go through string.format('%d').
 */
export function luaHashReceipt(item: string): string {
  return `
local function fg_receipt_item(st, j)
${item}
end

local function fg_receipt(st, js, cost)
  local parts, seen = {}, {}
  for _, j in ipairs(js) do
    local field, text = fg_receipt_item(st, j)
    if not seen[field] then
      seen[field] = true
      parts[#parts + 1] = text
    end
  end
  return table.concat(parts, ',')
end
`;
}

/** The JavaScript twin of luaHashReceipt: `item(j)` gives [field, text]. */
export function hashReceipt(js: readonly number[], item: (j: number) => [field: string, text: string]): string {
  const byField = new Map(js.map((j) => item(j)));
  return [...byField.values()].join(',');
}

/** A receipt's items, each split at ':' into numbers ('' has none). */
export function receiptItems(receipt: string): number[][] {
  return receipt === '' ? [] : receipt.split(',').map((item) => item.split(':').map(Number));
}
