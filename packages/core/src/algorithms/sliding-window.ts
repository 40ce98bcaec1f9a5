import { ConfigError } from '../errors';
import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';
import { LUA_HASH_SAVE, hashReceipt, luaHashReceipt, receiptItems, savedHash } from './hash-state';

/*
 * Sliding window as a ring of time buckets (the Redback design): a rule's window W is cut into P buckets
 * of B = W / P ms (P = `precision`; W % P === 0 is checked at construction, so B is an integer). The
 * last W ms always overlap P + 1 aligned buckets, so the ring has P + 1 slots: bucket i lives in slot
 * i mod (P + 1). A check sums every bucket of age 0..P (age = current bucket - bucket), counting the
 * partly covered oldest one whole: never more than `limit` in ANY window of length W, and at most one
 * bucket's worth of under-admission.
 *
 * One hash field per (window, precision), so rules sharing both share one ring, counted once:
 *   '<W>:<P>' = '<last>,<c0>,<c1>,...,<cP>'   last = the newest bucket written; cS = count in slot S
 * A slot's bucket is the newest bucket <= last that maps to it; buckets older than current - P are
 * ignored when read and zeroed when the ring advances, so no decision rests on the key's TTL.
 * All values are integers written with %d: the Lua and JavaScript twins compute the same numbers.
 *
 * Undo receipt (Cluster, DESIGN.md invariant 2): '<W>:<P>:<bucket>' per ring, the bucket the cost went
 * into (the ring's `last` after the commit, which is the current bucket unless the clock stepped back).
 * The undo subtracts the cost from that slot, clamped at 0, only while the slot still holds that bucket
 * (last - P <= bucket <= last): once the ring has moved past it the slot was zeroed or reused, and the
 * cost has left the window anyway. Counts in one bucket are additive, so this is exactly the state the
 * other admitted checks would have left: never more admitted than without the undone check.
 */
const lua = `${LUA_HASH_SAVE}
local function fg_load(key)
  local raw = redis.call('HGETALL', key)
  local f = {}
  for i = 1, #raw, 2 do
    local c, last = {}, nil
    for v in string.gmatch(raw[i + 1], '[^,]+') do
      if last == nil then last = tonumber(v) else c[#c + 1] = tonumber(v) end
    end
    f[raw[i]] = { last = last, c = c }
  end
  return { f = f, done = {}, ages = {} }
end

-- counts by age (0 = current bucket .. P = oldest still overlapping the window), and their sum
-- Memoised per ring for this call (rules sharing a ring, and the re-evaluation after fg_commit, which
-- updates the memo exactly as a rescan would find it).
local function sw_ages(st, j)
  local w, p = W[j], P[j]
  local name = w .. ':' .. p
  local memo = st.ages[name]
  if memo then return memo.cnt, memo.n, memo.cur end
  local cur = math.floor(NOW / (w / p))
  local ring = st.f[name]
  local cnt, n = {}, 0
  for a = 0, p do cnt[a] = 0 end
  if ring then
    for s = 0, p do
      local c = ring.c[s + 1] or 0
      if c > 0 then
        local x = ring.last - s
        local a = cur - (ring.last - (x - math.floor(x / (p + 1)) * (p + 1)))
        if a < 0 then a = 0 end
        if a <= p then
          cnt[a] = cnt[a] + c
          n = n + c
        end
      end
    end
  end
  st.ages[name] = { cnt = cnt, n = n, cur = cur }
  return cnt, n, cur
end

-- -> available now, ms until every bucket has aged out, ms until cost fits (0: fits now)
local function fg_eval(st, j, cost)
  local w, lim, p = W[j], L[j], P[j]
  local b = w / p
  local cnt, n, cur = sw_ages(st, j)
  local avail = lim - n
  if avail < 0 then avail = 0 end
  local reset, retry = 0, 0
  for a = 0, p do
    if cnt[a] > 0 then
      reset = (cur - a + p + 1) * b - NOW
      break
    end
  end
  if cost > lim then
    retry = w
  elseif cost > 0 and n + cost > lim then
    -- the oldest buckets leave first: bucket (cur - a) leaves when bucket (cur - a + P + 1) begins
    for a = p, 0, -1 do
      n = n - cnt[a]
      if n + cost <= lim then
        retry = (cur - a + p + 1) * b - NOW
        break
      end
    end
  end
  return avail, reset, retry
end

local function fg_commit(st, j, cost)
  local w, p = W[j], P[j]
  local name = w .. ':' .. p
  if st.done[name] then return end
  st.done[name] = true
  local n1 = p + 1
  local cur = math.floor(NOW / (w / p))
  local ring = st.f[name]
  if not ring then
    ring = { last = cur, c = {} }
    st.f[name] = ring
  end
  for s = 1, n1 do ring.c[s] = ring.c[s] or 0 end
  if cur > ring.last then
    local from = ring.last + 1
    if cur - ring.last > p then from = cur - p end
    for bi = from, cur do ring.c[bi - math.floor(bi / n1) * n1 + 1] = 0 end
    ring.last = cur
  end
  local s = ring.last - math.floor(ring.last / n1) * n1 + 1
  ring.c[s] = ring.c[s] + cost
  -- The cost lands at age 0 (a bucket at or ahead of the current one), and the slots zeroed above only
  -- held buckets older than P, which the memo never counted: a rescan would find exactly this.
  local memo = st.ages[name]
  if memo then
    memo.cnt[0] = memo.cnt[0] + cost
    memo.n = memo.n + cost
  end
end

local function fg_save(key, st, js)
  local args, ttl = {}, 0
  for _, j in ipairs(js) do
    local w, p = W[j], P[j]
    local name = w .. ':' .. p
    local ring = st.f[name]
    -- One string.format of P + 2 integers (%d, as before) instead of P + 2 calls and a concat.
    local parts = string.format('%d' .. string.rep(',%d', p + 1), ring.last, unpack(ring.c, 1, p + 1))
    args[#args + 1] = name
    args[#args + 1] = parts
    local left = (ring.last + p + 1) * (w / p) - NOW
    if left > ttl then ttl = left end
  end
  fg_hset(key, args, ttl)
end
`;

/* Receipt: '<W>:<P>:<bucket>' per ring the identifier's rules consumed (rules sharing a ring name it once). */
const receipt = luaHashReceipt(`
  local name = W[j] .. ':' .. P[j]
  return name, string.format('%d:%d:%d', W[j], P[j], st.f[name].last)`);

const undo = `
local function fg_undo(key, receipt, cost)
  for w, p, bucket in string.gmatch(receipt, '(%d+):(%d+):(%d+)') do
    local name = w .. ':' .. p
    local raw = redis.call('HGET', key, name)
    if raw then
      local v = {}
      for x in string.gmatch(raw, '[^,]+') do v[#v + 1] = tonumber(x) end
      local n1, bi = tonumber(p) + 1, tonumber(bucket)
      local age = v[1] - bi
      if age >= 0 and age < n1 then
        local s = bi - math.floor(bi / n1) * n1 + 2
        local c = v[s] - cost
        if c < 0 then c = 0 end
        v[s] = c
        for k = 1, #v do v[k] = string.format('%d', v[k]) end
        redis.call('HSET', key, name, table.concat(v, ','))
      end
    end
  end
end
`;

interface Ring {
  last: number;
  c: number[];
}
type Rings = Map<string, Ring>;
interface State {
  f: Rings;
  done: Set<string>;
}

/** Lua 5.1's `%` (a - floor(a / b) * b), so both twins round identically. */
const mod = (a: number, b: number): number => a - Math.floor(a / b) * b;

function ages(st: State, j: number, ctx: FrameContext): { cnt: number[]; n: number; cur: number } {
  const w = ctx.W[j]!;
  const p = ctx.P[j]!;
  const cur = Math.floor(ctx.now / (w / p));
  const ring = st.f.get(`${w}:${p}`);
  const cnt = new Array<number>(p + 1).fill(0);
  let n = 0;
  if (ring) {
    for (let s = 0; s <= p; s++) {
      const c = ring.c[s] ?? 0;
      if (c <= 0) continue;
      const a = Math.max(cur - (ring.last - mod(ring.last - s, p + 1)), 0);
      if (a <= p) {
        cnt[a]! += c;
        n += c;
      }
    }
  }
  return { cnt, n, cur };
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.W[j]!;
  const lim = ctx.L[j]!;
  const p = ctx.P[j]!;
  const b = w / p;
  const { cnt, n, cur } = ages(st, j, ctx);
  let reset = 0;
  let retry = 0;
  const youngest = cnt.findIndex((c) => c > 0);
  if (youngest >= 0) reset = (cur - youngest + p + 1) * b - ctx.now;
  if (cost > lim) retry = w;
  else if (cost > 0 && n + cost > lim) {
    let left = n;
    for (let a = p; a >= 0; a--) {
      left -= cnt[a]!;
      if (left + cost <= lim) {
        retry = (cur - a + p + 1) * b - ctx.now;
        break;
      }
    }
  }
  return [Math.max(lim - n, 0), reset, retry];
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const w = ctx.W[j]!;
  const p = ctx.P[j]!;
  const name = `${w}:${p}`;
  if (st.done.has(name)) return;
  st.done.add(name);
  const n1 = p + 1;
  const cur = Math.floor(ctx.now / (w / p));
  let ring = st.f.get(name);
  if (!ring) {
    ring = { last: cur, c: [] };
    st.f.set(name, ring);
  }
  for (let s = 0; s < n1; s++) ring.c[s] ??= 0;
  if (cur > ring.last) {
    const from = cur - ring.last > p ? cur - p : ring.last + 1;
    for (let bi = from; bi <= cur; bi++) ring.c[mod(bi, n1)] = 0;
    ring.last = cur;
  }
  ring.c[mod(ring.last, n1)]! += cost;
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Rings> | undefined {
  return savedHash(st.f, js, (j) => {
    const w = ctx.W[j]!;
    const p = ctx.P[j]!;
    return (st.f.get(`${w}:${p}`)!.last + p + 1) * (w / p) - ctx.now;
  }, ctx);
}

function receiptOf(st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => {
    const name = `${ctx.W[j]}:${ctx.P[j]}`;
    return [name, `${name}:${st.f.get(name)!.last}`];
  });
}

function undoOn(stored: Rings | undefined, receipt: string, cost: number): void {
  for (const [w, p, bucket] of receiptItems(receipt) as Array<[number, number, number]>) {
    const ring = stored?.get(`${w}:${p}`);
    if (ring === undefined) continue;
    const age = ring.last - bucket;
    if (age < 0 || age > p) continue;
    const s = mod(bucket, p + 1);
    ring.c[s] = Math.max((ring.c[s] ?? 0) - cost, 0);
  }
}

export const slidingWindow: Algorithm<State, Rings> = {
  name: 'sliding-window',
  tag: 'sw1',
  lua,
  undo: { receipt, undo, twin: { receipt: receiptOf, undo: undoOn } },
  twin: {
    load: (stored) => ({
      f: new Map([...(stored ?? [])].map(([k, r]) => [k, { last: r.last, c: [...r.c] }])),
      done: new Set(),
    }),
    evaluate,
    commit,
    save,
  },
  param: (rule) => rule.precision,
  validate: (rule, at) => {
    if (rule.windowMs % rule.precision !== 0) {
      throw new ConfigError(
        `${at}.precision`,
        `must divide the window evenly (sliding-window buckets are window / precision ms); got precision ${rule.precision} for a window of ${rule.windowMs} ms`,
      );
    }
  },
};
