import { lit, str, type LuaTemplates } from './script';
import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';
import { hashReceipt, receiptItems, savedHash } from './hash-state';

/*
 * Fixed window: one counter per aligned window floor(now / W), as in the INCR + EXPIRE pattern, but all
 * rules of an identifier live in one hash so a single script reads and writes them together.
 *
 * Hash fields (layout 2, tag fw2):
 *   't'   the time (ms) of the last write; every applicable rule is written together, so each rule's
 *         counter belongs to window floor(t / W)
 *   '<W>' units counted in that window, per rule window W (keyed by window, so two rules with one window
 *         share one counter)
 * A counter whose window floor(t / W) is not the current one is zero: the decision never depends on the
 * key's TTL. One stamp instead of an index per rule: 4 fields for 3 rules instead of 6 (less memory,
 * a shorter HSET). Fields of rules no longer configured are deleted on write, so a stale counter can
 * never be read against a newer stamp.
 * Guarantee: never more than `limit` per aligned window; up to 2x limit across a boundary.
 */
/*
 * The Lua (script.ts builds a limiter's script from these). Per field f: f_I, the current window's index,
 * and f_E, the ms to its end, once per call; its value c is the count in the current window (0 when the
 * stamp is in another window). Identifier-wide: `stale`, the hash's fields of rules no longer configured
 * (deleted on write), and `kept`, how long the key already lives (to the end of the windows its stamp was
 * in), so the PEXPIRE is skipped when the new state needs no longer.
 */
const lua: LuaTemplates = {
  vars: ['c'],
  idVars: ['stale', 'kept'],
  setup: (f) => `local ${f.id}_I = floor(NOW / ${lit(f.window)})\nlocal ${f.id}_E = (${f.id}_I + 1) * ${lit(f.window)} - NOW`,
  load: (m, _ctx, v) => `local raw = redis.call('HGETALL', key)
local t, stale, kept
${m.fields.map((f) => `local ${v(f)('c')} = 0`).join('\n')}
for k = 1, #raw, 2 do
  local name = raw[k]
  if name == 't' then t = tonumber(raw[k + 1])
${m.fields.map((f) => `  elseif name == ${str(f.name)} then ${v(f)('c')} = tonumber(raw[k + 1]) or 0`).join('\n')}
  else
    stale = stale or {}
    stale[#stale + 1] = name
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
  .join('\n')}`,
  evaluate: (r, _ctx, v, cost) => `avail = ${lit(r.limit)} - ${v('c')}
if avail < 0 then avail = 0 end
reset, retry = 0, 0
if ${v('c')} > 0 then reset = ${r.field.id}_E end
if ${cost} > avail then retry = ${r.field.id}_E end`,
  commit: (_f, _ctx, v) => `${v('c')} = ${v('c')} + COST`,
  save: (m, _ctx, v) => `if stale then redis.call('HDEL', key, unpack(stale)) end
redis.call('HSET', key, 't', fmt('%d', NOW), ${m.fields.map((f) => `${str(f.name)}, fmt('%d', ${v(f)('c')})`).join(', ')})
local ttl = 0
${m.fields.map((f) => `if ${f.id}_E > ttl then ttl = ${f.id}_E end`).join('\n')}
if kept == nil or ttl > kept then redis.call('PEXPIRE', key, ttl + PAD) end`,
  // the window consumed: '<W>:<index>'
  receipt: (f) => `${str(`${f.name}:`)} .. fmt('%d', ${f.id}_I)`,
};

/* The give-back (AlgorithmUndo): the cost, from each window of the receipt the stored stamp is still in. */
const undo = `
local function fg_undo(key, receipt, cost)
  local t = tonumber(redis.call('HGET', key, 't'))
  if t == nil then return end
  for w, idx in string.gmatch(receipt, '(%d+):(%d+)') do
    if math.floor(t / tonumber(w)) == tonumber(idx) then
      local n = (tonumber(redis.call('HGET', key, w)) or 0) - cost
      if n < 0 then n = 0 end
      redis.call('HSET', key, w, string.format('%d', n))
    end
  end
end
`;

type Fields = Map<string, number>;
interface State {
  f: Fields;
  /** Committed counts by window, written by save. */
  n: Map<number, number>;
}

function count(st: State, w: number, now: number): number {
  const t = st.f.get('t');
  if (t === undefined || Math.floor(t / w) !== Math.floor(now / w)) return 0;
  return st.f.get(String(w)) ?? 0;
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.window[j]!;
  const n = count(st, w, ctx.now);
  const avail = Math.max(ctx.limit[j]! - n, 0);
  const left = (Math.floor(ctx.now / w) + 1) * w - ctx.now;
  return [avail, n > 0 ? left : 0, cost > avail ? left : 0];
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const w = ctx.window[j]!;
  if (st.n.has(w)) return;
  st.n.set(w, count(st, w, ctx.now) + cost);
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Fields> | undefined {
  if (js.length === 0) return undefined;
  // A fresh map: fields of rules not in `js` are dropped, as the Lua HDELs them.
  const f: Fields = new Map([['t', ctx.now]]);
  for (const j of js) f.set(String(ctx.window[j]!), st.n.get(ctx.window[j]!)!);
  st.f = f;
  return savedHash(f, js, (j) => (Math.floor(ctx.now / ctx.window[j]!) + 1) * ctx.window[j]! - ctx.now, ctx);
}

function receiptOf(_st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => [`${ctx.window[j]}`, `${ctx.window[j]}:${Math.floor(ctx.now / ctx.window[j]!)}`]);
}

function undoOn(stored: Fields | undefined, receipt: string, cost: number): void {
  const t = stored?.get('t');
  if (stored === undefined || t === undefined) return;
  for (const [w, idx] of receiptItems(receipt)) {
    if (Math.floor(t / w!) === idx) stored.set(String(w), Math.max((stored.get(String(w)) ?? 0) - cost, 0));
  }
}

export const fixedWindow: Algorithm<State, Fields> = {
  name: 'fixed-window',
  tag: 'fw2',
  lua,
  undo: { undo, twin: { receipt: receiptOf, undo: undoOn } },
  twin: {
    load: (stored) => ({ f: new Map(stored), n: new Map() }),
    evaluate,
    commit,
    save,
  },
  ruleOptions: [],
  capacity: (rule) => rule.limit,
  field: (rule) => String(rule.windowMs),
};
