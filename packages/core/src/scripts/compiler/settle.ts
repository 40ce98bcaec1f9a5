import type { Rule } from '../../config/rules';
import { LUA_GIVE } from '../incarnation';
import { RULE_ARGS } from '../frame';
import { LUA_GIVE_COST } from '../units';
import type { Algorithm } from '../types';
import { costLua, nowLua } from './frames';
import { indent } from './lua';
import { header, plan } from './plan';
import { commitOf, maskNames, shapeOf } from './shape';

/*
 * The settle script of a reservation (scripts/settle.ts has the protocol and the JavaScript twin): per
 * identifier, first the give-back of what the actual cost left of the estimate (the refund's fg_give: only
 * from the windows or buckets that still hold it, only in the key's incarnation), then the charge of what
 * the actual cost went past it: every applicable rule's field committed with no admission test, the key
 * saved as a check saves it. The inline shape always: it has no evaluations to share.
 */
export function settleScript(algorithm: Algorithm, rules: readonly Rule[]): string {
  const t = algorithm.lua;
  const { ctx, masks } = plan(algorithm, rules, 'settle');
  const shape = shapeOf(masks, true);
  const masksAt = 6 + RULE_ARGS * rules.length;
  const known = masks.map((m) => `['${m.mask}'] = true`).join(', ');
  const branches = masks
    .filter((m) => m.rules.length > 0)
    .map((m, k) =>
      [
        `${k === 0 ? 'if' : 'elseif'} mask == '${m.mask}' then`,
        indent(
          [t.load(m, ctx, maskNames).trim(), ...m.fields.map((f) => commitOf(t, ctx, shape, f)), t.save(m, ctx, maskNames).trim()].join(
            '\n',
          ),
          2,
        ),
      ].join('\n'),
    );
  const setup = ctx.fields.map((f) => t.setup?.(f, ctx).trim() ?? '').filter(Boolean);
  const sections = [
    header(algorithm, rules, ctx, masks, 'settle', false),
    `-- the give-back (ARGV[1]) and the charge (ARGV[2]: COST, or each unit's COSTn)
${LUA_GIVE_COST.trim()}
local GIVE = fg_cost(ARGV[1])
${costLua(ctx.units, 'ARGV[2]')}
${nowLua('ARGV[3]')}
local PAD = tonumber(ARGV[4])
local floor, fmt = math.floor, string.format
local NONCE = ARGV[${masksAt}]
if NONCE and not string.find(NONCE, '^[1-9]%d*$') then NONCE = nil end`,
    `-- the give-back of one key (the refund's)\n${algorithm.undo.undo.trim()}\n${algorithm.undo.incarnation.trim()}\n${LUA_GIVE.trim()}`,
    ...(setup.length > 0 ? [`-- per field, what depends only on NOW\n${setup.join('\n')}`] : []),
    `-- every mask is one this script was made for, before anything is written
local KNOWN = { ${known} }
for i = 1, #KEYS do
  local mask = ARGV[${masksAt} + 2 * i - 1]
  if not KNOWN[mask] then return redis.error_reply('ERR floodgate: no plan for rule mask ' .. tostring(mask)) end
end`,
    `-- per identifier: the give-back, then the charge
for i = 1, #KEYS do
  local key, mask, receipt = KEYS[i], ARGV[${masksAt} + 2 * i - 1], ARGV[${masksAt} + 2 * i]
  if receipt ~= '' then fg_give(key, receipt, GIVE) end
  if COST > 0 then
${indent(branches.length > 0 ? `${branches.join('\n')}\nend` : '', 4)}
  end
end
return 1`,
  ];
  return `${sections.join('\n\n')}\n`;
}
