import { ConfigError } from '../errors';
import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';
import { LUA_HASH_SAVE, savedHash } from './hash-state';

/*
 * Token bucket as GCRA, the Generic Cell Rate Algorithm (ITU-T I.371; the form popularised by
 * redis-cell / "throttled"): one theoretical arrival time (TAT) per rule instead of a counter.
 *   emission interval T = W / L ms (one unit every T), capacity C = burst ?? L, tolerance C * T.
 *   A cost k at time t is admitted iff max(TAT, t) + k * T - t <= C * T; then TAT := max(TAT, t) + k * T.
 * An idle bucket holds C units and refills one per T, so a first window of length W can admit up to
 * C + L - 1 units (C at once, then one per T for the rest of the window); later windows at most L + the
 * refilled part of C. Remaining = floor((C * T - debt) / T); reset = debt; retry = exact time the cost fits.
 *
 * T may be fractional, so time is counted in ticks of 1 / L ms, where T = W ticks exactly:
 *   debt d = max(TAT - now, 0) in ticks, capacity C * W ticks, a unit costs W ticks.
 *   TAT is stored as integer ms `a` plus a remainder `r` in ticks (0 <= r < L): TAT = a + r / L.
 * Every value is an integer below 2^53 ((C + L) * W <= 2^53 is checked at construction), so Lua doubles
 * and JavaScript numbers agree bit for bit. Field '<W>:<L>:<C>' = '<a>:<r>': rules with the same window
 * but another limit or burst keep their own TAT.
 */
const lua = `${LUA_HASH_SAVE}
local function fg_load(key)
  local raw = redis.call('HGETALL', key)
  local f = {}
  for i = 1, #raw, 2 do
    local v = raw[i + 1]
    local sep = string.find(v, ':', 1, true)
    f[raw[i]] = { a = tonumber(string.sub(v, 1, sep - 1)), r = tonumber(string.sub(v, sep + 1)) }
  end
  return { f = f, done = {} }
end

local function tb_name(j)
  return W[j] .. ':' .. L[j] .. ':' .. P[j]
end

-- the debt: ticks (1/L ms) until the TAT, never negative
local function tb_debt(st, j)
  local t = st.f[tb_name(j)]
  if not t then return 0 end
  local d = (t.a - NOW) * L[j] + t.r
  if d < 0 then d = 0 end
  return d
end

-- -> available now, ms until the bucket is full, ms until cost fits (0: fits now)
local function fg_eval(st, j, cost)
  local w, lim, cap = W[j], L[j], P[j]
  local d = tb_debt(st, j)
  local avail = 0
  if cap * w > d then avail = math.floor((cap * w - d) / w) end
  local reset = math.floor((d + lim - 1) / lim)
  local retry = 0
  if cost > cap then
    retry = w
  elseif cost > 0 and d + cost * w > cap * w then
    retry = math.floor((d + cost * w - cap * w + lim - 1) / lim)
  end
  return avail, reset, retry
end

local function fg_commit(st, j, cost)
  local name = tb_name(j)
  if st.done[name] then return end
  st.done[name] = true
  local w, lim, cap = W[j], L[j], P[j]
  local k = cost
  if k > cap then k = cap end
  local d = tb_debt(st, j) + k * w
  if d > cap * w then d = cap * w end
  local q = math.floor(d / lim)
  st.f[name] = { a = NOW + q, r = d - q * lim }
end

local function fg_save(key, st, js)
  local args, ttl = {}, 0
  for _, j in ipairs(js) do
    local name = tb_name(j)
    local t = st.f[name]
    args[#args + 1] = name
    args[#args + 1] = string.format('%d:%d', t.a, t.r)
    local left = t.a - NOW + 1
    if left > ttl then ttl = left end
  end
  fg_hset(key, args, ttl)
end
`;

interface Tat {
  a: number;
  r: number;
}
type Tats = Map<string, Tat>;
interface State {
  f: Tats;
  done: Set<string>;
}

const fieldName = (j: number, ctx: FrameContext): string => `${ctx.W[j]}:${ctx.L[j]}:${ctx.P[j]}`;

function debt(st: State, j: number, ctx: FrameContext): number {
  const t = st.f.get(fieldName(j, ctx));
  return t ? Math.max((t.a - ctx.now) * ctx.L[j]! + t.r, 0) : 0;
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.W[j]!;
  const lim = ctx.L[j]!;
  const cap = ctx.P[j]!;
  const d = debt(st, j, ctx);
  const avail = cap * w > d ? Math.floor((cap * w - d) / w) : 0;
  const reset = Math.floor((d + lim - 1) / lim);
  let retry = 0;
  if (cost > cap) retry = w;
  else if (cost > 0 && d + cost * w > cap * w) retry = Math.floor((d + cost * w - cap * w + lim - 1) / lim);
  return [avail, reset, retry];
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const name = fieldName(j, ctx);
  if (st.done.has(name)) return;
  st.done.add(name);
  const w = ctx.W[j]!;
  const lim = ctx.L[j]!;
  const cap = ctx.P[j]!;
  const d = Math.min(debt(st, j, ctx) + Math.min(cost, cap) * w, cap * w);
  const q = Math.floor(d / lim);
  st.f.set(name, { a: ctx.now + q, r: d - q * lim });
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Tats> | undefined {
  return savedHash(st.f, js, (j) => st.f.get(fieldName(j, ctx))!.a - ctx.now + 1, ctx);
}

export const tokenBucket: Algorithm<State, Tats> = {
  name: 'token-bucket',
  tag: 'tb1',
  lua,
  twin: {
    load: (stored) => ({ f: new Map([...(stored ?? [])].map(([k, t]) => [k, { ...t }])), done: new Set() }),
    evaluate,
    commit,
    save,
  },
  param: (rule) => rule.burst,
  validate: (rule, at) => {
    if ((rule.burst + rule.limit) * rule.windowMs > Number.MAX_SAFE_INTEGER) {
      throw new ConfigError(
        `${at}.burst`,
        `(burst + limit) * window must stay below 2^53 for exact token-bucket arithmetic; got burst ${rule.burst}, limit ${rule.limit}, window ${rule.windowMs} ms`,
      );
    }
  },
};
