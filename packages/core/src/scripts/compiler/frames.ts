import { lockoutLua, type LockoutSpec } from '../lockout';
import type { MaskSpec } from '../types';
import { indent } from './lua';
import { checkPhase, commitPhase, type MaskCode } from './mask';

/**
 * The cost of a check (ARGV[2]): COST, one number for every rule when the rules count one unit; else one per
 * unit, COST1, COST2, ... (scripts/units.ts), and COST their sum (more than 0 exactly when the check commits
 * anything). A cost list of another length is an error, never a unit read as 0.
 */
export function costLua(units: readonly string[], at: string): string {
  if (units.length === 1) return `local COST = tonumber(${at})`;
  const names = units.map((_, k) => `COST${k + 1}`);
  return `local COSTS = {}
for c in string.gmatch(${at}, '[^:]+') do COSTS[#COSTS + 1] = tonumber(c) end
if #COSTS ~= ${units.length} then return redis.error_reply('ERR floodgate: ${units.length} unit costs expected (${units.join(', ')})') end
local ${names.join(', ')} = ${names.map((_, k) => `COSTS[${k + 1}]`).join(', ')}
local COST = ${names.join(' + ')}`;
}

/** NOW: Redis TIME, unless the ARGV `at` holds a test clock's time. */
export const nowLua = (at: string): string => `local NOW
if ${at} == '' then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  NOW = tonumber(${at})
end`;

/** The call's values (ARGV 1-5): op, cost, penalty, the time (Redis TIME unless a test clock), pad. */
export const prologue = (units: readonly string[]): string => `local OP = ARGV[1]
${costLua(units, 'ARGV[2]')}
local PENALTY = ARGV[3] == '1'
${nowLua('ARGV[4]')}
local PAD = tonumber(ARGV[5])
local floor, fmt = math.floor, string.format`;

/** The reply under construction (the mask functions write into it). */
export const REPLY = `local out = { NOW, 0, 0 }
local ok, blocked = true, false
local e`;

/** Every identifier's block, read with one MGET, into out[4 ..] (blockMs, blockReason per identifier). */
export const BLOCKS = `local NIDS = #KEYS / KEYS_PER_ID
local bkeys = {}
for i = 1, NIDS do bkeys[i] = KEYS[2 * i] end
local bvals = redis.call('MGET', unpack(bkeys))
for i = 1, NIDS do
  local bms, reason = 0, ''
  local b = bvals[i]
  if b then
    local sep = string.find(b, '|', 1, true) or (#b + 1)
    local untilMs = tonumber(string.sub(b, 1, sep - 1))
    if untilMs and untilMs > NOW then
      bms = untilMs - NOW
      reason = string.sub(b, sep + 1)
      blocked = true
    end
  end
  out[2 * i + 2], out[2 * i + 3] = bms, reason
end
local E0 = 3 + 2 * NIDS`;

/**
 * The single-Redis frame: all or nothing, then every pair evaluated again at `after` (0 when admitted). The
 * refundable kind also answers, when the check consumed, each identifier's undo receipt (limiter.refund()).
 */
export function singleFrame(
  masks: readonly MaskSpec[],
  code: ReadonlyMap<MaskSpec, MaskCode>,
  refundable: boolean,
  units: number,
  lockout?: LockoutSpec,
): string {
  // With several units, `after` is 0 or 1, and each rule is evaluated at after * its unit's cost (mask.ts).
  return `${checkPhase(masks, code, lockout !== undefined)}
if OP == 'c' and COST > 0 and not blocked and (ok or PENALTY) then
  out[3] = 1
  local after = ok and 0 or ${units === 1 ? 'COST' : '1'}
  e = E0${refundable ? '\n  local receipts = {}' : ''}
${indent(commitPhase(masks, code), 2)}${refundable ? "\n  for i = 1, NIDS do out[e + i] = receipts[i] or '' end" : ''}
end${lockout ? `\n${lockoutLua(lockout)}` : ''}
if ok and not blocked then out[2] = 1 end
return out`;
}

/*
 * The split frame (a Cluster slot of a check whose identifiers span slots, docs/design.md section 6):
 * the same evaluation and writes, but no slot knows what the others answer, so the reply carries every
 * outcome the whole check can have (frame.ts): the pairs before any commit; when this slot consumed, the
 * pairs after the commit at 0 and at COST, each identifier's undo receipt and a snapshot of each key as
 * it was before.
 */
export function splitFrame(masks: readonly MaskSpec[], code: ReadonlyMap<MaskSpec, MaskCode>, lockout?: LockoutSpec): string {
  return `${checkPhase(masks, code, lockout !== undefined)}
if ok and not blocked then out[2] = 1 end${lockout ? `\n${lockoutLua(lockout)}` : ''}
if OP == 'c' and COST > 0 and not blocked and (ok or PENALTY) then
  out[3] = 1
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local before = {}
  for i = 1, NIDS do
    if S[i] then
      local key = KEYS[2 * i - 1]
      local ty, items = fg_read(key)
      local at = -1
      if ty ~= 'none' then
        local pttl = redis.call('PTTL', key)
        if pttl >= 0 then at = clock + pttl end
      end
      for k = 1, #items do items[k] = fg_enc(items[k]) end
      before[i] = { ty, at, items }
    end
  end
  local at0, atCost, receipts = {}, {}, {}
${indent(commitPhase(masks, code), 2)}
  for k = 1, #at0 do out[e + k] = at0[k] end
  e = e + #at0
  for k = 1, #atCost do out[e + k] = atCost[k] end
  e = e + #atCost
  for i = 1, NIDS do out[e + i] = receipts[i] or '' end
  e = e + NIDS
  for i = 1, NIDS do
    local b = before[i]
    if b == nil then
      out[e + 1], out[e + 2], out[e + 3], out[e + 4] = '', 'none', -1, 0
      e = e + 4
    else
      out[e + 1], out[e + 2], out[e + 3], out[e + 4] = fg_digest(KEYS[2 * i - 1]), b[1], b[2], #b[3]
      e = e + 4
      for k = 1, #b[3] do out[e + k] = b[3][k] end
      e = e + #b[3]
    end
  end
end
return out`;
}
