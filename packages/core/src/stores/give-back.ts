import type { Algorithm } from '../scripts/types';
import { LUA_SNAPSHOT } from '../scripts/frame';
import { LUA_GIVE } from '../scripts/incarnation';
import { LUA_GIVE_COST } from '../scripts/units';
import type { UndoReceipt } from '../scripts/reply';

/*
 * The give-back, over state keys of one slot. KEYS: the state keys. ARGV[1] the cost to give back: one number,
 * or one per unit (scripts/units.ts); then per key:
 * its receipt, the digest of the key as the check left it ('' for none), and its snapshot: type, expireAt,
 * n, then n items (fg_enc). Reply: per key 1 when the snapshot was restored, 2 when the receipt was run (a
 * receipt of another incarnation of the key gives nothing back).
 */
const UNDO_MAIN = `
local function fg_restore(key, ty, items, at)
  redis.call('DEL', key)
  for i = 1, #items, 1000 do
    local chunk = { unpack(items, i, math.min(i + 999, #items)) }
    if ty == 'hash' then redis.call('HSET', key, unpack(chunk)) else redis.call('RPUSH', key, unpack(chunk)) end
  end
  if #items > 0 and at >= 0 then redis.call('PEXPIREAT', key, at) end
end

local cost = fg_cost(ARGV[1])
local p, how = 2, {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local receipt, digest, ty, at, n = ARGV[p], ARGV[p + 1], ARGV[p + 2], tonumber(ARGV[p + 3]), tonumber(ARGV[p + 4])
  if digest ~= '' and fg_digest(key) == digest then
    local items = {}
    for k = 1, n do items[k] = fg_dec(ARGV[p + 4 + k]) end
    fg_restore(key, ty, items, at)
    how[i] = 1
  else
    fg_give(key, receipt, cost)
    how[i] = 2
  end
  p = p + 5 + n
end
return how
`;

/**
 * The give-back script of an algorithm: its fg_undo, run only while the key holds the receipt's incarnation
 * (fg_give, scripts/incarnation.ts), and the snapshot restore for a split check's slots.
 */
export function giveBackLua(algorithm: Algorithm): string {
  return `${LUA_SNAPSHOT}\n${LUA_GIVE_COST}\n${algorithm.undo.undo}\n${algorithm.undo.incarnation}\n${LUA_GIVE}\n${UNDO_MAIN}`;
}

/**
 * ARGV of a give-back: the cost (one number, or one per unit: scripts/units.ts), then per key its receipt and snapshot. A bare string is a receipt alone
 * (a refund, or a key the check did not write): fg_undo gives back only what still applies.
 */
export function giveBackArgs(receipts: readonly (string | UndoReceipt)[], cost: number | string): (string | number)[] {
  const args: (string | number)[] = [cost];
  for (const r of receipts) {
    if (typeof r === 'string') args.push(r, '', 'none', -1, 0);
    else args.push(r.receipt, r.digest, r.type, r.expireAt, r.items.length, ...r.items);
  }
  return args;
}
