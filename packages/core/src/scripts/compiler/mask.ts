import { boundReceiptLua } from '../incarnation';
import type { MaskSpec, CompileContext, LuaTemplates, RuleSpec } from '../types';
import { indent } from './lua';
import type { ScriptKind } from './plan';
import { commitOf, evaluation, maskNames, maskVars, receiptOf, type Shape } from './shape';

/** One pair's result into the reply (a retry means the check does not fit). */
const PUT = `out[e + 1], out[e + 2], out[e + 3] = avail, reset, retry
e = e + 3
if retry > 0 then ok = false end`;

/**
 * A mask's code: check (load, then every rule at COST into the reply; gives S[i], what phase 2 needs) and
 * commit (every field committed, the key saved, then the rules evaluated again: into the reply at `after`,
 * or, split, into the lists at0 and atCost, giving the identifier's undo receipt). In the inline shape it is
 * written into the frame's branches; in the shared shape it is two functions, F.<mask>_check and _commit.
 */
export interface MaskCode {
  check: string;
  commit: string;
  /** Shared shape: the functions' definitions. */
  functions?: string;
}

export function maskCode(t: LuaTemplates, ctx: CompileContext, shape: Shape, m: MaskSpec, kind: ScriptKind): MaskCode {
  const split = kind === 'split';
  const receipt = `receipts[i] = ${boundReceiptLua(m.fields.map((f) => receiptOf(t, ctx, shape, f)).join(" .. ',' .. "))}`;
  const vars = maskVars(t, m);
  // A rule's cost: its unit's (r.cost), 0, or `after` (0 or the cost; with several units 0 or 1, times it).
  const costAt = (at: 'COST' | '0' | 'after', r: RuleSpec): string =>
    at === 'COST' ? r.cost : at === '0' || ctx.units.length === 1 ? at : `after * ${r.cost}`;
  const evals = (at: 'COST' | '0' | 'after', into: string): string[] =>
    m.rules.map((r) => `${evaluation(t, ctx, shape, r, costAt(at, r))}\n${into}`);
  const keep = (list: string): string => `${list}[#${list} + 1], ${list}[#${list} + 2], ${list}[#${list} + 3] = avail, reset, retry`;
  const check = [t.load(m, ctx, maskNames).trim(), ...evals('COST', PUT), `S[i] = { ${vars.join(', ')} }`].join('\n');
  const commit = [
    `local ${vars.join(', ')} = unpack(s, 1, ${vars.length})`,
    ...m.fields.map((f) => commitOf(t, ctx, shape, f)),
    t.save(m, ctx, maskNames).trim(),
    ...(split ? [...evals('0', keep('at0')), ...evals('COST', keep('atCost')), receipt] : evals('after', PUT)),
    ...(kind === 'refundable' ? [receipt] : []),
  ].join('\n');
  if (!shape.shared) return { check, commit };
  // As functions: S, i, receipts, at0, atCost and after become parameters.
  const params = split ? ['key', 's', 'at0', 'atCost'] : ['key', 's', 'after'];
  return {
    check: `S[i] = ${shape.call(`${m.id}_check`, ['key'])}`,
    commit: kind === 'single' ? shape.call(`${m.id}_commit`, params) : `receipts[i] = ${shape.call(`${m.id}_commit`, params)}`,
    functions: [
      `-- mask ${m.id} '${m.mask}': rules ${m.rules.map((r) => r.id).join(', ')}`,
      shape.define(`${m.id}_check`, ['key'], `local avail, reset, retry\n${check.replace(/^S\[i\] = /m, 'return ')}`),
      shape.define(`${m.id}_commit`, params, `local avail, reset, retry\n${commit.replace(/^receipts\[i\] = /m, 'return ')}`),
    ].join('\n'),
  };
}

/** The frame's dispatch over masks: `body(m)` per mask, a Redis error for a mask this script was not made for. */
function dispatch(masks: readonly MaskSpec[], body: (m: MaskSpec) => string): string {
  const branches = masks.map((m, k) => `${k === 0 ? 'if' : 'elseif'} mask == '${m.mask}' then\n${indent(body(m), 2)}`);
  return `${branches.join('\n')}\nelse\n  return redis.error_reply('ERR floodgate: no plan for rule mask ' .. tostring(mask))\nend`;
}

/** Phase 1: per identifier, its rules at COST into the reply (S[i]: what phase 2 needs; false: no rule applies). */
export function checkPhase(masks: readonly MaskSpec[], code: ReadonlyMap<MaskSpec, MaskCode>, lockout: boolean): string {
  const check = indent(
    dispatch(masks, (m) => (m.rules.length === 0 ? 'S[i] = false' : code.get(m)!.check)),
    lockout ? 4 : 2,
  );
  // With a lockout, which identifiers' own rules denied (den[i]): each such denial counts toward its lockout.
  if (lockout) {
    return `e = E0
local S, den = {}, {}
local avail, reset, retry
for i = 1, NIDS do
  local key, mask = KEYS[2 * i - 1], ARGV[MASKS + i]
  local was = ok
  ok = true
  do
${check}
  end
  if not ok then den[i] = true end
  ok = was and ok
end`;
  }
  return `e = E0
local S = {}
local avail, reset, retry
for i = 1, NIDS do
  local key, mask = KEYS[2 * i - 1], ARGV[MASKS + i]
${check}
end`;
}

/** Phase 2 over the identifiers a rule applies to: each mask's commit, with key, mask and s (S[i]) in scope. */
export function commitPhase(masks: readonly MaskSpec[], code: ReadonlyMap<MaskSpec, MaskCode>): string {
  return `for i = 1, NIDS do
  local key, mask, s = KEYS[2 * i - 1], ARGV[MASKS + i], S[i]
  if s then
${indent(
  dispatch(
    masks.filter((m) => m.rules.length > 0),
    (m) => code.get(m)!.commit,
  ),
  4,
)}
  end
end`;
}
