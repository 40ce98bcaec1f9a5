import { lit, str, type Compiler } from './compile';
import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';
import { LUA_HASH_SAVE, hashReceipt, luaHashReceipt, receiptItems, savedHash } from './hash-state';

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
const lua = `${LUA_HASH_SAVE}
local FW_IDX = {}
for j = 1, NR do FW_IDX[j] = math.floor(NOW / W[j]) end

local function fg_load(key)
  local raw = redis.call('HGETALL', key)
  local f = {}
  for i = 1, #raw, 2 do f[raw[i]] = raw[i + 1] end
  return { f = f, t = tonumber(f['t']), n = {} }
end

local function fw_count(st, j)
  local t = st.t
  if t == nil or math.floor(t / W[j]) ~= FW_IDX[j] then return 0 end
  return tonumber(st.f[F[j]]) or 0
end

-- -> available now, ms until the count is back to zero, ms until cost fits (0: fits now)
local function fg_eval(st, j, cost)
  local lim = L[j]
  local n = fw_count(st, j)
  local avail = lim - n
  if avail < 0 then avail = 0 end
  local left = (FW_IDX[j] + 1) * W[j] - NOW
  local reset, retry = 0, 0
  if n > 0 then reset = left end
  if cost > avail then retry = left end
  return avail, reset, retry
end

local function fg_commit(st, j, cost)
  local name = F[j]
  if st.n[name] then return end
  st.n[name] = fw_count(st, j) + cost
end

local function fg_save(key, st, js)
  -- no rule applies to this identifier: nothing to write (as the twin, and the compiled script)
  if #js == 0 then return end
  local f = { t = NOW }
  local args, ttl, kept = { 't', NOW }, 0, nil
  local t0 = st.t
  for _, j in ipairs(js) do
    local name, w = F[j], W[j]
    if f[name] == nil then
      f[name] = st.n[name]
      args[#args + 1] = name
      args[#args + 1] = st.n[name]
    end
    local left = (FW_IDX[j] + 1) * w - NOW
    if left > ttl then ttl = left end
    -- the key already lives to the end of the windows its previous stamp was in
    if t0 then
      local had = (math.floor(t0 / w) + 1) * w - NOW
      if kept == nil or had > kept then kept = had end
    end
  end
  local stale = {}
  for name in pairs(st.f) do
    if f[name] == nil then stale[#stale + 1] = name end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  st.f, st.t = f, NOW
  fg_hset(key, args, ttl, kept)
end
`;

/*
 * Receipt: 'w:idx' per distinct window consumed (idx = floor(now / w)). Undo gives the cost back only while
 * the stored stamp t is still in window idx: the counter then still holds this check's cost.
 */
const receipt = luaHashReceipt(`
  return F[j], string.format('%d:%d', W[j], FW_IDX[j])`);

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

/*
 * Compiled (compile.ts): per field v, the window's index v_I and the ms to its end v_E are computed once
 * per call; v_c is the field's count in the current window (0 when the stamp is in another window).
 */
const compiler: Compiler = {
  setup: (f) => `local ${f.v}_I = floor(NOW / ${lit(f.rule.W)})\nlocal ${f.v}_E = (${f.v}_I + 1) * ${lit(f.rule.W)} - NOW`,
  load: (fields) => `local raw = redis.call('HGETALL', key)
local t, stale, kept
${fields.map((f) => `local ${f.v}_c = 0`).join('\n')}
for k = 1, #raw, 2 do
  local name = raw[k]
  if name == 't' then t = tonumber(raw[k + 1])
${fields.map((f) => `  elseif name == ${str(f.name)} then ${f.v}_c = tonumber(raw[k + 1]) or 0`).join('\n')}
  else
    stale = stale or {}
    stale[#stale + 1] = name
  end
end
${fields.map((f) => `if t == nil then ${f.v}_c = 0
else
  local h = floor(t / ${lit(f.rule.W)})
  if h ~= ${f.v}_I then ${f.v}_c = 0 end
  local had = (h + 1) * ${lit(f.rule.W)} - NOW
  if kept == nil or had > kept then kept = had end
end`).join('\n')}`,
  locals: (fields) => ['stale', 'kept', ...fields.map((f) => `${f.v}_c`)],
  evaluate: (r, cost) => `A = ${lit(r.L)} - ${r.field.v}_c
if A < 0 then A = 0 end
R, Y = 0, 0
if ${r.field.v}_c > 0 then R = ${r.field.v}_E end
if ${cost} > A then Y = ${r.field.v}_E end`,
  commit: (f) => `${f.v}_c = ${f.v}_c + COST`,
  save: (fields) => `if stale then redis.call('HDEL', key, unpack(stale)) end
redis.call('HSET', key, 't', fmt('%d', NOW), ${fields.map((f) => `${str(f.name)}, fmt('%d', ${f.v}_c)`).join(', ')})
local ttl = 0
${fields.map((f) => `if ${f.v}_E > ttl then ttl = ${f.v}_E end`).join('\n')}
if kept == nil or ttl > kept then redis.call('PEXPIRE', key, ttl + PAD) end`,
};

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
  const w = ctx.W[j]!;
  const n = count(st, w, ctx.now);
  const avail = Math.max(ctx.L[j]! - n, 0);
  const left = (Math.floor(ctx.now / w) + 1) * w - ctx.now;
  return [avail, n > 0 ? left : 0, cost > avail ? left : 0];
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const w = ctx.W[j]!;
  if (st.n.has(w)) return;
  st.n.set(w, count(st, w, ctx.now) + cost);
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Fields> | undefined {
  if (js.length === 0) return undefined;
  // A fresh map: fields of rules not in `js` are dropped, as the Lua HDELs them.
  const f: Fields = new Map([['t', ctx.now]]);
  for (const j of js) f.set(String(ctx.W[j]!), st.n.get(ctx.W[j]!)!);
  st.f = f;
  return savedHash(f, js, (j) => (Math.floor(ctx.now / ctx.W[j]!) + 1) * ctx.W[j]! - ctx.now, ctx);
}

function receiptOf(_st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => [`${ctx.W[j]}`, `${ctx.W[j]}:${Math.floor(ctx.now / ctx.W[j]!)}`]);
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
  compiler,
  undo: { receipt, undo, twin: { receipt: receiptOf, undo: undoOn } },
  twin: {
    load: (stored) => ({ f: new Map(stored), n: new Map() }),
    evaluate,
    commit,
    save,
  },
  param: () => 0,
  field: (rule) => String(rule.windowMs),
};
