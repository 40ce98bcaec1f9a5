import { DEFAULT_UNIT } from '../config/rules';

/*
 * Units (docs/budgets.md): what each rule counts, and how a call's cost per unit travels in the scripts'
 * arguments (docs/design.md, section 4).
 *
 * A rule of the default unit ('requests') keeps the state field it always had; a rule of another unit has
 * its field named with the unit after '@' ('60000@tokens'), so rules of two units never share a counter,
 * and a limiter whose rules name no unit runs the scripts and keeps the keys it always did.
 *
 * The cost of a check (its ARGV[2]): one integer for every rule when its rules count one unit (whatever its
 * name), else one integer per unit of its rules, in the order of each unit's first rule, joined by ':'
 * ('1:1200'): no comma, so it travels in a batch's per-check argument as it is.
 *
 * The cost of a give-back (its ARGV[1]): one integer for every item of the receipts, or, when the units'
 * costs differ, '<unit>=<n>' per unit joined by ',' ('requests=0,tokens=300'): a receipt names its fields,
 * and with them their units, but the give-back script is the algorithm's, not the rule set's.
 */

/** The suffix of a rule's field: '' for the default unit, '@<unit>' for another. */
export const unitSuffix = (rule: { readonly unit?: string | undefined }): string =>
  rule.unit === undefined || rule.unit === DEFAULT_UNIT ? '' : `@${rule.unit}`;

/** The unit of a field name (the default unit without '@'). */
export function fieldUnit(field: string): string {
  const at = field.indexOf('@');
  return at === -1 ? DEFAULT_UNIT : field.slice(at + 1);
}

/** A field name without its unit. */
export function fieldBase(field: string): string {
  const at = field.indexOf('@');
  return at === -1 ? field : field.slice(0, at);
}

/** A check's ARGV[2] as per-unit costs: one number (every unit), or one per unit. */
export function parseCostArg(arg: string | number): number[] {
  return typeof arg === 'number' ? [arg] : String(arg).split(':').map(Number);
}

/** What a check's cost adds up to: more than 0 exactly when it commits anything. */
export function costTotal(arg: string | number): number {
  return parseCostArg(arg).reduce((a, b) => a + b, 0);
}

/** A give-back's cost per unit: one number for every unit, or a unit's own ('<unit>=<n>' pairs). */
export type GiveCost = number | Readonly<Record<string, number>>;

/** A give-back's ARGV[1] (see the top of the file). */
export function giveCostArg(cost: GiveCost): string | number {
  if (typeof cost === 'number') return cost;
  return Object.entries(cost)
    .map(([unit, n]) => `${unit}=${n}`)
    .join(',');
}

/** A give-back's ARGV[1], read: the cost for a unit (0 for one it does not name). */
export function giveCostOf(arg: string | number): (unit: string) => number {
  const n = Number(arg);
  if (String(arg) !== '' && Number.isFinite(n)) return () => n;
  const byUnit = new Map<string, number>();
  for (const pair of String(arg).split(',')) {
    const eq = pair.indexOf('=');
    if (eq > 0) byUnit.set(pair.slice(0, eq), Number(pair.slice(eq + 1)));
  }
  return (unit) => byUnit.get(unit) ?? 0;
}

/**
 * Lua: fg_cost(arg) -> a function of a field's unit suffix ('' or '@<unit>') giving its cost; the twin of
 * giveCostOf.
 */
export const LUA_GIVE_COST = `
local function fg_cost(arg)
  local n = tonumber(arg)
  if n then return function() return n end end
  local t = {}
  for unit, c in string.gmatch(arg, '([%w_%-]+)=(%d+)') do t[unit] = tonumber(c) end
  return function(sfx)
    local unit = '${DEFAULT_UNIT}'
    if sfx ~= '' then unit = string.sub(sfx, 2) end
    return t[unit] or 0
  end
end
`;

/** A check's cost argument (ARGV[2]) as a give-back's: the same number, or each unit's named (`units`: the program's). */
export function giveCostFromCheck(arg: string | number, units: readonly string[]): number | string {
  const costs = parseCostArg(arg);
  if (units.length <= 1) return costs[0]!;
  return giveCostArg(Object.fromEntries(units.map((u, k) => [u, costs[k]!])));
}
