import { ConfigError } from '../errors';
import { lit, str, type Compiler } from './compile';
import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';
import { LUA_HASH_SAVE, hashReceipt, luaHashReceipt, receiptItems, savedHash } from './hash-state';

/*
 * Sliding window as a ring of time buckets (the Redback design): a rule's window W is cut into P buckets
 * of B = W / P ms (P = `precision`; W % P === 0 is checked at construction, so B is an integer). The
 * last W ms always overlap P + 1 aligned buckets, so a ring keeps P + 1 counts. A check sums every
 * bucket of age 0..P (age = current bucket - bucket), counting the partly covered oldest one whole:
 * never more than `limit` in ANY window of length W, and at most one bucket's worth of under-admission.
 *
 * Layout 2 (tag sw2): one hash field per (window, precision), so rules sharing both share one ring,
 * counted once. Field '<W>:<P>' holds P + 2 integers, MessagePack-encoded one after the other:
 *   last, c[0], c[1], ..., c[P]    last = the newest bucket written; c[k] = the count of bucket last - k
 * The counts are kept newest first, so reading the ring needs no modular arithmetic: when the current
 * bucket is d buckets past `last`, c[k] has age d + k and only c[0 .. P - d] are still in the window.
 * Advancing shifts the counts by d. MessagePack because Redis's cmsgpack decodes a ring in one C call:
 * layout 1 kept '<last>,<c0>,...' text, and splitting it with string.gmatch cost ~40 µs of Redis CPU per
 * check of 3 rules x 2 identifiers, more than everything else the script does. Small counts take one
 * byte each, so a ring of precision 10 is about 20 bytes.
 * Buckets older than current - P are ignored when read and dropped when the ring advances, so no
 * decision rests on the key's TTL. When the clock steps back (current < last), buckets ahead of the
 * current one count as age 0, and a commit adds to bucket `last`.
 *
 * Undo receipt (Cluster, DESIGN.md invariant 2): '<W>:<P>:<bucket>' per ring, the bucket the cost went
 * into (the ring's `last` after the commit). The undo subtracts the cost from that bucket, clamped at 0,
 * only while the ring still holds it (last - P <= bucket <= last): once the ring has moved past it, the
 * cost has left the window anyway. Counts in one bucket are additive, so this is exactly the state the
 * other admitted checks would have left: never more admitted than without the undone check.
 */
const lua = `${LUA_HASH_SAVE}
local SW_B = {}
for j = 1, NR do SW_B[j] = W[j] / P[j] end

local function fg_load(key)
  local raw = redis.call('HGETALL', key)
  local f = {}
  for i = 1, #raw, 2 do f[raw[i]] = { cmsgpack.unpack(raw[i + 1]) } end
  return { f = f, done = {}, memo = {} }
end

-- A ring as this call sees it, memoised per ring (rules sharing it, and the re-evaluation after a
-- commit, which updates the memo exactly as a rescan would find it):
--   n   the sum of the counts still in the window; cur the current bucket
--   d   cur - last (0 without a ring); y the Lua index (2 = c[0]) of the newest non-zero count, or nil
local function sw_view(st, j)
  local name = F[j]
  local m = st.memo[name]
  if m then return m end
  local p = P[j]
  local cur = math.floor(NOW / SW_B[j])
  local r = st.f[name]
  local n, d, y = 0, 0, nil
  if r then
    d = cur - r[1]
    local top = p + 2
    if d > 0 then top = top - d end
    for k = 2, top do
      local c = r[k]
      if c ~= 0 then
        n = n + c
        if y == nil then y = k end
      end
    end
  end
  m = { n = n, cur = cur, d = d, y = y }
  st.memo[name] = m
  return m
end

-- -> available now, ms until every bucket has aged out, ms until cost fits (0: fits now)
local function fg_eval(st, j, cost)
  local lim, p = L[j], P[j]
  local m = sw_view(st, j)
  local n, cur = m.n, m.cur
  local avail = lim - n
  if avail < 0 then avail = 0 end
  local reset, retry = 0, 0
  local b = SW_B[j]
  if m.y then
    -- bucket last - (y - 2), or the current one when the clock stepped back
    local bkt = cur - m.d - m.y + 2
    if bkt > cur then bkt = cur end
    reset = (bkt + p + 1) * b - NOW
  end
  if cost > lim then
    retry = W[j]
  elseif cost > 0 and n + cost > lim then
    -- the oldest buckets leave first: bucket x leaves when bucket x + P + 1 begins
    local r = st.f[F[j]]
    local top = p + 2
    if m.d > 0 then top = top - m.d end
    for k = top, 2, -1 do
      n = n - r[k]
      if n + cost <= lim then
        local bkt = cur - m.d - k + 2
        if bkt > cur then bkt = cur end
        retry = (bkt + p + 1) * b - NOW
        break
      end
    end
  end
  return avail, reset, retry
end

local function fg_commit(st, j, cost)
  local name = F[j]
  if st.done[name] then return end
  st.done[name] = true
  local p = P[j]
  local m = sw_view(st, j)
  local r = st.f[name]
  if not r then
    r = { m.cur }
    for k = 2, p + 2 do r[k] = 0 end
    st.f[name] = r
  else
    -- the ring's expiry before this write (fg_hset skips the PEXPIRE when it is late enough)
    local left = (r[1] + p + 1) * SW_B[j] - NOW
    if st.kept == nil or left > st.kept then st.kept = left end
  end
  if m.d > 0 then
    local d = m.d
    for k = p + 2, 2, -1 do
      if k - d >= 2 then r[k] = r[k - d] else r[k] = 0 end
    end
    r[1] = m.cur
    m.d = 0
  end
  r[2] = r[2] + cost
  -- What a rescan would find: the counts that left the window were never in n; c[0] now holds the cost.
  m.n = m.n + cost
  if cost > 0 then m.y = 2 end
end

local function fg_save(key, st, js)
  local args, ttl = {}, 0
  for _, j in ipairs(js) do
    local name = F[j]
    local r = st.f[name]
    local p = P[j]
    args[#args + 1] = name
    args[#args + 1] = cmsgpack.pack(unpack(r, 1, p + 2))
    local left = (r[1] + p + 1) * SW_B[j] - NOW
    if left > ttl then ttl = left end
  end
  fg_hset(key, args, ttl, st.kept)
end
`;

/* Receipt: '<W>:<P>:<bucket>' per ring the identifier's rules consumed (rules sharing a ring name it once). */
const receipt = luaHashReceipt(`
  local name = F[j]
  return name, string.format('%s:%d', name, st.f[name][1])`);

const undo = `
local function fg_undo(key, receipt, cost)
  for w, p, bucket in string.gmatch(receipt, '(%d+):(%d+):(%d+)') do
    local name = w .. ':' .. p
    local raw = redis.call('HGET', key, name)
    if raw then
      local r = { cmsgpack.unpack(raw) }
      local n = tonumber(p) + 2
      local k = r[1] - tonumber(bucket) + 2
      if k >= 2 and k <= n then
        local c = r[k] - cost
        if c < 0 then c = 0 end
        r[k] = c
        redis.call('HSET', key, name, cmsgpack.pack(unpack(r, 1, n)))
      end
    end
  end
end
`;

/*
 * Compiled (compile.ts): per ring v, v_cur is the current bucket (once per call); v_r the ring as read
 * (nil without one), v_n, v_d and v_y what sw_view memoises: the in-window sum, cur - last, and the index
 * of the newest non-zero count.
 */
const compiler: Compiler = {
  setup: (f) => `local ${f.v}_cur = floor(NOW / ${lit(f.rule.W / f.rule.P)})`,
  load: (fields) => `local raw = redis.call('HMGET', key, ${fields.map((f) => str(f.name)).join(', ')})
local kept
${fields.map((f, k) => `local ${f.v}_r, ${f.v}_n, ${f.v}_d, ${f.v}_y = nil, 0, 0, nil
if raw[${k + 1}] then
  local r = { cmsgpack.unpack(raw[${k + 1}]) }
  ${f.v}_r = r
  ${f.v}_d = ${f.v}_cur - r[1]
  local top = ${lit(f.rule.P + 2)}
  if ${f.v}_d > 0 then top = top - ${f.v}_d end
  for k = 2, top do
    local c = r[k]
    if c ~= 0 then
      ${f.v}_n = ${f.v}_n + c
      if ${f.v}_y == nil then ${f.v}_y = k end
    end
  end
end`).join('\n')}`,
  locals: (fields) => ['kept', ...fields.flatMap((f) => [`${f.v}_r`, `${f.v}_n`, `${f.v}_d`, `${f.v}_y`])],
  evaluate: (rule, cost) => {
    const { v, rule: { P } } = rule.field;
    const B = lit(rule.W / P);
    return `A = ${lit(rule.L)} - ${v}_n
if A < 0 then A = 0 end
R, Y = 0, 0
if ${v}_y then
  local bkt = ${v}_cur - ${v}_d - ${v}_y + 2
  if bkt > ${v}_cur then bkt = ${v}_cur end
  R = (bkt + ${lit(P + 1)}) * ${B} - NOW
end
if ${cost} > ${lit(rule.L)} then
  Y = ${lit(rule.W)}
elseif ${cost} > 0 and ${v}_n + ${cost} > ${lit(rule.L)} then
  local n, r = ${v}_n, ${v}_r
  local top = ${lit(P + 2)}
  if ${v}_d > 0 then top = top - ${v}_d end
  for k = top, 2, -1 do
    n = n - r[k]
    if n + ${cost} <= ${lit(rule.L)} then
      local bkt = ${v}_cur - ${v}_d - k + 2
      if bkt > ${v}_cur then bkt = ${v}_cur end
      Y = (bkt + ${lit(P + 1)}) * ${B} - NOW
      break
    end
  end
end`;
  },
  commit: (f) => {
    const { v, rule: { W, P } } = f;
    return `do
  local r = ${v}_r
  if not r then
    r = { ${v}_cur${', 0'.repeat(P + 1)} }
    ${v}_r = r
  else
    local left = (r[1] + ${lit(P + 1)}) * ${lit(W / P)} - NOW
    if kept == nil or left > kept then kept = left end
  end
  if ${v}_d > 0 then
    local d = ${v}_d
    for k = ${lit(P + 2)}, 2, -1 do
      if k - d >= 2 then r[k] = r[k - d] else r[k] = 0 end
    end
    r[1] = ${v}_cur
    ${v}_d = 0
  end
  r[2] = r[2] + COST
  ${v}_n = ${v}_n + COST
  if COST > 0 then ${v}_y = 2 end
end`;
  },
  save: (fields) => `redis.call('HSET', key, ${fields.map((f) => `${str(f.name)}, cmsgpack.pack(unpack(${f.v}_r, 1, ${lit(f.rule.P + 2)}))`).join(', ')})
local ttl = 0
${fields.map((f) => `do
  local left = (${f.v}_r[1] + ${lit(f.rule.P + 1)}) * ${lit(f.rule.W / f.rule.P)} - NOW
  if left > ttl then ttl = left end
end`).join('\n')}
if kept == nil or ttl > kept then redis.call('PEXPIRE', key, ttl + PAD) end`,
};

/** A ring: `last`, the newest bucket written, and c[k] = the count of bucket last - k (k = 0..P). */
interface Ring {
  last: number;
  c: number[];
}
type Rings = Map<string, Ring>;
interface View {
  n: number;
  cur: number;
  d: number;
  /** Index in c of the newest non-zero count, or -1. */
  y: number;
}
interface State {
  f: Rings;
  done: Set<string>;
  memo: Map<string, View>;
}

const ringName = (j: number, ctx: FrameContext): string => ctx.F[j]!;

/** The twin of sw_view (memoised per ring for the call, like the Lua). */
function view(st: State, j: number, ctx: FrameContext): View {
  const name = ringName(j, ctx);
  let m = st.memo.get(name);
  if (m) return m;
  const p = ctx.P[j]!;
  const cur = Math.floor(ctx.now / (ctx.W[j]! / p));
  const r = st.f.get(name);
  let n = 0;
  let d = 0;
  let y = -1;
  if (r) {
    d = cur - r.last;
    const top = d > 0 ? p - d : p;
    for (let k = 0; k <= top; k++) {
      const c = r.c[k]!;
      if (c === 0) continue;
      n += c;
      if (y < 0) y = k;
    }
  }
  m = { n, cur, d, y };
  st.memo.set(name, m);
  return m;
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const lim = ctx.L[j]!;
  const p = ctx.P[j]!;
  const b = ctx.W[j]! / p;
  const m = view(st, j, ctx);
  let n = m.n;
  // The start of bucket (last - k) + P + 1, or of the current bucket's when the clock stepped back.
  const leaves = (k: number): number => (Math.min(m.cur - m.d - k, m.cur) + p + 1) * b - ctx.now;
  const reset = m.y >= 0 ? leaves(m.y) : 0;
  let retry = 0;
  if (cost > lim) retry = ctx.W[j]!;
  else if (cost > 0 && n + cost > lim) {
    const r = st.f.get(ringName(j, ctx))!;
    for (let k = m.d > 0 ? p - m.d : p; k >= 0; k--) {
      n -= r.c[k]!;
      if (n + cost <= lim) {
        retry = leaves(k);
        break;
      }
    }
  }
  return [Math.max(lim - m.n, 0), reset, retry];
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const name = ringName(j, ctx);
  if (st.done.has(name)) return;
  st.done.add(name);
  const p = ctx.P[j]!;
  const m = view(st, j, ctx);
  let r = st.f.get(name);
  if (!r) {
    r = { last: m.cur, c: new Array<number>(p + 1).fill(0) };
    st.f.set(name, r);
  } else if (m.d > 0) {
    for (let k = p; k >= 0; k--) r.c[k] = k - m.d >= 0 ? r.c[k - m.d]! : 0;
    r.last = m.cur;
    m.d = 0;
  }
  r.c[0]! += cost;
  m.n += cost;
  if (cost > 0) m.y = 0;
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Rings> | undefined {
  return savedHash(st.f, js, (j) => {
    const p = ctx.P[j]!;
    return (st.f.get(ringName(j, ctx))!.last + p + 1) * (ctx.W[j]! / p) - ctx.now;
  }, ctx);
}

function receiptOf(st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => {
    const name = ringName(j, ctx);
    return [name, `${name}:${st.f.get(name)!.last}`];
  });
}

function undoOn(stored: Rings | undefined, receipt: string, cost: number): void {
  for (const [w, p, bucket] of receiptItems(receipt) as Array<[number, number, number]>) {
    const ring = stored?.get(`${w}:${p}`);
    if (ring === undefined) continue;
    const k = ring.last - bucket;
    if (k < 0 || k > p) continue;
    ring.c[k] = Math.max(ring.c[k]! - cost, 0);
  }
}

export const slidingWindow: Algorithm<State, Rings> = {
  name: 'sliding-window',
  tag: 'sw2',
  lua,
  compiler,
  undo: { receipt, undo, twin: { receipt: receiptOf, undo: undoOn } },
  twin: {
    load: (stored) => ({
      f: new Map([...(stored ?? [])].map(([k, r]) => [k, { last: r.last, c: [...r.c] }])),
      done: new Set(),
      memo: new Map(),
    }),
    evaluate,
    commit,
    save,
  },
  param: (rule) => rule.precision,
  field: (rule) => `${rule.windowMs}:${rule.precision}`,
  validate: (rule, at) => {
    if (rule.windowMs % rule.precision !== 0) {
      throw new ConfigError(
        `${at}.precision`,
        `must divide the window evenly (sliding-window buckets are window / precision ms); got precision ${rule.precision} for a window of ${rule.windowMs} ms`,
      );
    }
  },
};
