import { lit, str } from './compiler/lua';
import type { Algorithm, FrameContext, PairEval, SavedValue, LuaTemplates } from './types';
import { hashIncarnation, hashReceipt, receiptItems, savedHash } from './hash-state';
import { adoptLua, HASH_INCARNATION, INCARNATION_FIELD } from './incarnation';
import { fieldBase, unitSuffix } from './units';
import { charged, chargedLua, DEBT_SUFFIX, withDebt, withDebtLua } from './debt';

/*
 * Fixed window: one counter per aligned window floor(now / W), as in the INCR + EXPIRE pattern, but all
 * rules of an identifier live in one hash so a single script reads and writes them together.
 *
 * Hash fields (layout 2, tag fw2):
 *   't'   the time (ms) of the last write; every counter in the hash is rewritten or kept with it, so
 *         each counter belongs to window floor(t / W)
 *   '<W>' units counted in that window, per rule window W (keyed by window, so two rules with one window
 *         share one counter); '<W>@<unit>' for rules of another unit than requests (units.ts)
 *   'i'   the key's incarnation, when a check that answers undo receipts wrote it (incarnation.ts)
 *   '<W>~' (or '<W>@<unit>~') while a settle's charge past the limit is being paid off: the time it is
 *         (debt.ts), counted beside the window's count until then, whichever window that falls in
 * A counter whose window floor(t / W) is not the current one is zero: the decision never depends on the
 * key's TTL. One stamp instead of an index per rule: 4 fields for 3 rules instead of 6 (less memory,
 * a shorter HSET).
 * Counters of windows these rules do not have (another plan's, docs/plans.md, or the other side's in a
 * deploy that changes the rules) are kept while their window is current: moving the stamp t within their
 * window dates them the same, so a check under one plan never forgets another plan's count. Once their
 * window has passed they are zero and deleted on write, so a stale counter is never read against a newer
 * stamp.
 * Guarantee: never more than `limit` per aligned window; up to 2x limit across a boundary.
 */
/*
 * The Lua (script.ts builds a limiter's script from these). Per field f: f_I, the current window's index,
 * and f_E, the ms to its end, once per call; its value c is the count in the current window (0 when the
 * stamp is in another window). Identifier-wide: `stale`, the hash's fields to delete on write (counters of
 * other windows that have passed, anything else unknown), `hold`, how long the other windows' counters
 * still need the key, `kept`, how long the key already lives (to the end of the windows its stamp was in),
 * so the PEXPIRE is skipped when the new state needs no longer, and `inc`, its incarnation.
 */
const lua: LuaTemplates = {
  vars: ['c', 'u'],
  idVars: ['stale', 'hold', 'kept', 'inc'],
  setup: (f) => `local ${f.id}_I = floor(NOW / ${lit(f.window)})\nlocal ${f.id}_E = (${f.id}_I + 1) * ${lit(f.window)} - NOW`,
  load: (m, _ctx, v) => `local raw = redis.call('HGETALL', key)
local t, other, stale, hold, kept, inc
${m.fields.map((f) => `local ${v(f)('c')}, ${v(f)('u')} = 0, 0`).join('\n')}
for k = 1, #raw, 2 do
  local name = raw[k]
  if name == 't' then t = tonumber(raw[k + 1])
  elseif name == '${INCARNATION_FIELD}' then inc = raw[k + 1]
${m.fields
  .map(
    (f) => `  elseif name == ${str(f.name)} then ${v(f)('c')} = tonumber(raw[k + 1]) or 0
  elseif name == ${str(f.name + DEBT_SUFFIX)} then ${v(f)('u')} = tonumber(raw[k + 1]) or 0`,
  )
  .join('\n')}
  else
    other = other or {}
    other[#other + 1] = name
    other[#other + 1] = raw[k + 1]
  end
end
-- each count as of the stamp t, and how long the key lives already (to the end of t's windows)
${m.fields
  .map(
    (f) => `if t == nil then ${v(f)('c')} = 0
else
  local h = floor(t / ${lit(f.window)})
  if h ~= ${f.id}_I then ${v(f)('c')} = 0 end
  local had = (h + 1) * ${lit(f.window)} - NOW
  if kept == nil or had > kept then kept = had end
end`,
  )
  .join('\n')}
-- counters of windows these rules do not have (another plan's): kept while their window is current, and
-- their debts while they are owed
if other then
  for k = 1, #other, 2 do
    local left
    if string.sub(other[k], -1) == '${DEBT_SUFFIX}' then
      local u = tonumber(other[k + 1])
      if u and u > NOW then left = u - NOW end
    else
      local w = tonumber(string.match(other[k], '^(%d+)$') or string.match(other[k], '^(%d+)@[%w_%-]+$'))
      if t and w and w >= 1 and floor(t / w) == floor(NOW / w) then left = (floor(NOW / w) + 1) * w - NOW end
    end
    if left then
      if hold == nil or left > hold then hold = left end
    else
      stale = stale or {}
      stale[#stale + 1] = other[k]
    end
  end
  if hold and (kept == nil or hold > kept) then kept = hold end
end`,
  evaluate: (r, _ctx, v, cost) => `avail = ${lit(r.limit)} - ${v('c')}
if avail < 0 then avail = 0 end
reset, retry = 0, 0
if ${v('c')} > 0 then reset = ${r.field.id}_E end
if ${cost} > avail then retry = ${r.field.id}_E end
${withDebtLua(v('u'), v('c'), cost, r.limit, r.window)}`,
  commit: (f, _ctx, v) => `${v('c')} = ${v('c')} + ${f.cost}`,
  // A settle's charge past the limit (ctx.charge) sets its debt with the limit of the mask's first rule of
  // the field, as the twin's commit does; a debt is written while owed, and deleted once paid.
  save: (m, ctx, v) => `if stale then redis.call('HDEL', key, unpack(stale)) end
${adoptLua(ctx.incarnations, `redis.call('HSET', key, '${INCARNATION_FIELD}', inc)`)}
redis.call('HSET', key, 't', fmt('%d', NOW), ${m.fields.map((f) => `${str(f.name)}, fmt('%d', ${v(f)('c')})`).join(', ')})
local ttl = hold or 0
${m.fields
  .map((f) => {
    const u = v(f)('u');
    const r = m.rules.find((x) => x.field === f)!;
    return `if ${f.id}_E > ttl then ttl = ${f.id}_E end
${
  ctx.charge
    ? `${chargedLua(u, v(f)('c'), f.cost, `${f.id}_E`, r.limit, r.window)}
`
    : ''
}if ${u} > NOW then
  redis.call('HSET', key, ${str(f.name + DEBT_SUFFIX)}, fmt('%d', ${u}))
  if ${u} - NOW > ttl then ttl = ${u} - NOW end
elseif ${u} ~= 0 then
  redis.call('HDEL', key, ${str(f.name + DEBT_SUFFIX)})
end`;
  })
  .join('\n')}
if kept == nil or ttl > kept then redis.call('PEXPIRE', key, ttl + PAD) end`,
  // the window consumed: '<W>:<index>'
  receipt: (f) => `${str(`${f.name}:`)} .. fmt('%d', ${f.id}_I)`,
};

/* The give-back (AlgorithmUndo): the cost, from each window of the receipt the stored stamp is still in. */
const undo = `
local function fg_undo(key, receipt, cost)
  local t = tonumber(redis.call('HGET', key, 't'))
  if t == nil then return end
  for w, sfx, idx in string.gmatch(receipt, '(%d+)(@?[%w_%-]*):(%d+)') do
    if math.floor(t / tonumber(w)) == tonumber(idx) then
      local n = (tonumber(redis.call('HGET', key, w .. sfx)) or 0) - cost(sfx)
      if n < 0 then n = 0 end
      redis.call('HSET', key, w .. sfx, string.format('%d', n))
    end
  end
end
`;

/** The stored hash: 't' and the counters as numbers, the incarnation ('i') as text. */
type Fields = Map<string, number | string>;
interface State {
  f: Fields;
  /** Committed counts by field (window and unit), written by save. */
  n: Map<string, number>;
}

/** A field's debt: when it is paid off (debt.ts), 0 for none. */
const debtOf = (f: Fields, name: string): number => (f.get(name + DEBT_SUFFIX) as number | undefined) ?? 0;

const stamp = (f: Fields): number | undefined => f.get('t') as number | undefined;

function count(st: State, name: string, w: number, now: number): number {
  const t = stamp(st.f);
  if (t === undefined || Math.floor(t / w) !== Math.floor(now / w)) return 0;
  return (st.f.get(name) as number | undefined) ?? 0;
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.window[j]!;
  const n = count(st, ctx.field[j]!, w, ctx.now);
  const avail = Math.max(ctx.limit[j]! - n, 0);
  const left = (Math.floor(ctx.now / w) + 1) * w - ctx.now;
  return withDebt([avail, n > 0 ? left : 0, cost > avail ? left : 0], debtOf(st.f, ctx.field[j]!), n, cost, ctx.limit[j]!, w, ctx.now);
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const name = ctx.field[j]!;
  if (st.n.has(name)) return;
  const w = ctx.window[j]!;
  const c = count(st, name, w, ctx.now) + cost;
  st.n.set(name, c);
  // A settle's charge past the limit: its debt (debt.ts), paid off from the end of this window.
  if (ctx.charge) {
    const end = (Math.floor(ctx.now / w) + 1) * w - ctx.now;
    st.f.set(name + DEBT_SUFFIX, charged(debtOf(st.f, name), c, cost, end, ctx.limit[j]!, w, ctx.now));
  }
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Fields> | undefined {
  if (js.length === 0) return undefined;
  const now = ctx.now;
  const t = stamp(st.f);
  const own = new Set(js.map((j) => ctx.field[j]!));
  const f: Fields = new Map([['t', now]]);
  // Counters of windows these rules do not have stay while their window is current (the Lua's `hold`).
  let hold = 0;
  for (const [name, value] of st.f) {
    if (name === 't' || name === INCARNATION_FIELD || own.has(name)) continue;
    // Debts, this call's or another plan's: kept while they are owed.
    if (name.endsWith(DEBT_SUFFIX)) {
      if ((value as number) > now) {
        f.set(name, value);
        if (!own.has(name.slice(0, -DEBT_SUFFIX.length))) hold = Math.max(hold, (value as number) - now);
      }
      continue;
    }
    if (!/^\d+(@[\w-]+)?$/.test(name)) continue;
    const w = Number(fieldBase(name));
    if (t === undefined || w < 1 || Math.floor(t / w) !== Math.floor(now / w)) continue;
    f.set(name, value);
    hold = Math.max(hold, (Math.floor(now / w) + 1) * w - now);
  }
  for (const j of js) f.set(ctx.field[j]!, st.n.get(ctx.field[j]!)!);
  const inc = st.f.get(INCARNATION_FIELD) ?? ctx.incarnation;
  if (inc !== undefined) f.set(INCARNATION_FIELD, inc);
  st.f = f;
  return savedHash(
    f,
    js,
    (j) => Math.max((Math.floor(now / ctx.window[j]!) + 1) * ctx.window[j]! - now, debtOf(f, ctx.field[j]!) - now),
    ctx,
    hold,
  );
}

function receiptOf(_st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => [ctx.field[j]!, `${ctx.field[j]}:${Math.floor(ctx.now / ctx.window[j]!)}`]);
}

function undoOn(stored: Fields | undefined, receipt: string, cost: (unit: string) => number): void {
  const t = stored === undefined ? undefined : stamp(stored);
  if (stored === undefined || t === undefined) return;
  for (const {
    nums: [w, idx],
    unit,
  } of receiptItems(receipt)) {
    const name = `${w}${unitSuffix({ unit })}`;
    if (Math.floor(t / w!) === idx) stored.set(name, Math.max(((stored.get(name) as number | undefined) ?? 0) - cost(unit), 0));
  }
}

export const fixedWindow: Algorithm<State, Fields> = {
  name: 'fixed-window',
  tag: 'fw2',
  lua,
  undo: { undo, incarnation: HASH_INCARNATION, twin: { receipt: receiptOf, undo: undoOn, incarnation: hashIncarnation } },
  twin: {
    load: (stored) => ({ f: new Map(stored), n: new Map() }),
    evaluate,
    commit,
    save,
  },
  ruleOptions: [],
  capacity: (rule) => rule.limit,
  field: (rule) => `${rule.windowMs}${unitSuffix(rule)}`,
};
