import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';
import { LUA_HASH_SAVE, hashReceipt, luaHashReceipt, receiptItems, savedHash } from './hash-state';

/*
 * Fixed window: one counter per aligned window floor(now / W), as in the INCR + EXPIRE pattern, but all
 * rules of an identifier live in one hash so a single script reads and writes them together.
 *
 * Hash fields per rule window W (keyed by window, so two rules with one window share one counter):
 *   'i'..W  index of the window the count belongs to (floor(now / W))
 *   'n'..W  units counted in that window
 * A count whose index is not the current one is zero: the decision never depends on the key's TTL.
 * Guarantee: never more than `limit` per aligned window; up to 2x limit across a boundary.
 */
const lua = `${LUA_HASH_SAVE}
local function fg_load(key)
  local raw = redis.call('HGETALL', key)
  local f = {}
  for i = 1, #raw, 2 do f[raw[i]] = tonumber(raw[i + 1]) end
  return { f = f, done = {} }
end

-- -> available now, ms until the count is back to zero, ms until cost fits (0: fits now)
local function fg_eval(st, j, cost)
  local w, lim = W[j], L[j]
  local idx = math.floor(NOW / w)
  local n = 0
  if st.f['i' .. w] == idx then n = st.f['n' .. w] or 0 end
  local avail = lim - n
  if avail < 0 then avail = 0 end
  local left = (idx + 1) * w - NOW
  local reset, retry = 0, 0
  if n > 0 then reset = left end
  if cost > avail then retry = left end
  return avail, reset, retry
end

local function fg_commit(st, j, cost)
  local w = W[j]
  if st.done[w] then return end
  st.done[w] = true
  local idx = math.floor(NOW / w)
  if st.f['i' .. w] ~= idx then
    st.f['i' .. w] = idx
    st.f['n' .. w] = 0
  end
  st.f['n' .. w] = (st.f['n' .. w] or 0) + cost
end

local function fg_save(key, st, js)
  local args, ttl = {}, 0
  for _, j in ipairs(js) do
    local w = W[j]
    args[#args + 1] = 'i' .. w
    args[#args + 1] = st.f['i' .. w]
    args[#args + 1] = 'n' .. w
    args[#args + 1] = st.f['n' .. w]
    local left = (math.floor(NOW / w) + 1) * w - NOW
    if left > ttl then ttl = left end
  end
  fg_hset(key, args, ttl)
end
`;

/* Receipt: 'w:idx' per distinct window consumed. Undo gives the cost back only while idx is current. */
const receipt = luaHashReceipt(`
  return W[j], string.format('%d:%d', W[j], st.f['i' .. W[j]])`);

const undo = `
local function fg_undo(key, receipt, cost)
  for w, idx in string.gmatch(receipt, '(%d+):(%d+)') do
    if redis.call('HGET', key, 'i' .. w) == idx then
      local n = (tonumber(redis.call('HGET', key, 'n' .. w)) or 0) - cost
      if n < 0 then n = 0 end
      redis.call('HSET', key, 'n' .. w, n)
    end
  end
end
`;

type Fields = Map<string, number>;
interface State {
  f: Fields;
  done: Set<number>;
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.W[j]!;
  const idx = Math.floor(ctx.now / w);
  const n = st.f.get(`i${w}`) === idx ? (st.f.get(`n${w}`) ?? 0) : 0;
  const avail = Math.max(ctx.L[j]! - n, 0);
  const left = (idx + 1) * w - ctx.now;
  return [avail, n > 0 ? left : 0, cost > avail ? left : 0];
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const w = ctx.W[j]!;
  if (st.done.has(w)) return;
  st.done.add(w);
  const idx = Math.floor(ctx.now / w);
  if (st.f.get(`i${w}`) !== idx) {
    st.f.set(`i${w}`, idx);
    st.f.set(`n${w}`, 0);
  }
  st.f.set(`n${w}`, (st.f.get(`n${w}`) ?? 0) + cost);
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Fields> | undefined {
  return savedHash(st.f, js, (j) => (Math.floor(ctx.now / ctx.W[j]!) + 1) * ctx.W[j]! - ctx.now, ctx);
}

function receiptOf(st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => [`${ctx.W[j]}`, `${ctx.W[j]}:${st.f.get(`i${ctx.W[j]}`)}`]);
}

function undoOn(stored: Fields | undefined, receipt: string, cost: number): void {
  if (stored === undefined) return;
  for (const [w, idx] of receiptItems(receipt)) {
    if (stored.get(`i${w}`) === idx) stored.set(`n${w}`, Math.max((stored.get(`n${w}`) ?? 0) - cost, 0));
  }
}

export const fixedWindow: Algorithm<State, Fields> = {
  name: 'fixed-window',
  tag: 'fw1',
  lua,
  undo: { receipt, undo, twin: { receipt: receiptOf, undo: undoOn } },
  twin: {
    load: (stored) => ({ f: new Map(stored), done: new Set() }),
    evaluate,
    commit,
    save,
  },
  param: () => 0,
};
