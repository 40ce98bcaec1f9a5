import { ConfigError } from '../kernel/errors';
import { lit, str } from './compiler/lua';
import type { Algorithm, FrameContext, PairEval, SavedValue, LuaTemplates } from './types';
import { hashIncarnation, hashReceipt, receiptItems, savedHash } from './hash-state';
import { adoptLua, HASH_INCARNATION, INCARNATION_FIELD } from './incarnation';
import { unitSuffix } from './units';
import { debtCapMs } from './debt';

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
 * and JavaScript numbers agree bit for bit. Field '<W>:<L>:<C>' = '<a>:<r>' ('<W>:<L>:<C>@<unit>' for rules
 * of another unit than requests, units.ts): rules with the same window
 * but another limit or burst keep their own TAT. Field 'i' holds the key's incarnation, when a check that
 * answers undo receipts wrote it (incarnation.ts). A check writes only its own rules' TATs: another plan's
 * (docs/plans.md) stay as they are, and a save never shortens the key's TTL, which they may need longer.
 *
 * Undo receipt (Cluster, docs/design.md section 6): per field '<W>:<L>:<C>:<inc>:<a>:<r>', the increment in
 * ticks the commit added and the TAT a + r / L it left. The undo gives the increment back only while the
 * stored TAT is still exactly that value, i.e. no later check has consumed on top of it.
 * Why not a partial give-back when a later check has pushed the TAT further? Subtracting the increment
 * from a larger TAT is unsafe: the later check's cost would have started from max(TAT, its time), so an
 * idle gap it filled is lost. GCRA's commits compose to TAT' = max(TAT + sum, M), which shows that
 * giving back min(inc, TAT_receipt - now) is safe for one undo, but not once undos interleave: check Y
 * (TAT 0 -> 50) and X (50 -> 100) at t=0; Y's undo gives back 50 (TAT 50); Z at t=60 makes it 110;
 * X's undo would give back min(50, 100 - 60) = 40 and leave 70, though Y and X undone leave only Z: 110.
 * The exact match keeps the undos a stack (a commit only ever raises the TAT, an exact undo restores
 * the value below it), so every undo restores precisely the state without that check. The price: when
 * the same field is consumed between a split check's commit and its undo, that cost stays consumed
 * until the bucket drains it (at most inc ticks, cost x W / L ms): under-admission, never over.
 */
/*
 * The Lua (script.ts builds a limiter's script from these). A field's values: d, the debt in ticks (from
 * the stored TAT; after a commit, the new debt, which the stored a + r / L gives back exactly), and add,
 * the ticks the commit added (for the undo receipt; 0 before). W, L and C are constants. The same
 * expressions as the JavaScript twin below, step for step. Unlike the window algorithms, a save always
 * reads the TTL: every commit moves the TAT, and with it how long the key must live. Identifier-wide:
 * `inc`, the key's incarnation.
 */
const lua: LuaTemplates = {
  vars: ['d', 'add'],
  idVars: ['inc'],
  load: (m, _ctx, v) => `local raw = redis.call('HMGET', key, ${m.fields.map((f) => str(f.name)).join(', ')}, '${INCARNATION_FIELD}')
local inc = raw[${m.fields.length + 1}] or nil
${m.fields
  .map((f, k) => {
    const x = v(f);
    return `local ${x('d')}, ${x('add')} = 0, 0
if raw[${k + 1}] then
  local s = raw[${k + 1}]
  local sep = string.find(s, ':', 1, true)
  ${x('d')} = (tonumber(string.sub(s, 1, sep - 1)) - NOW) * ${lit(f.limit)} + tonumber(string.sub(s, sep + 1))
  if ${x('d')} < 0 then ${x('d')} = 0 end
end`;
  })
  .join('\n')}`,
  evaluate: ({ window: W, limit: L, burst: C }, _ctx, v, cost) => `avail = 0
if ${lit(C * W)} > ${v('d')} then avail = floor((${lit(C * W)} - ${v('d')}) / ${lit(W)}) end
reset = floor((${v('d')} + ${lit(L)} - 1) / ${lit(L)})
retry = 0
if ${cost} > ${lit(C)} then
  retry = ${lit(W)}
elseif ${cost} > 0 and ${v('d')} + ${cost} * ${lit(W)} > ${lit(C * W)} then
  retry = floor((${v('d')} + ${cost} * ${lit(W)} - ${lit(C * W)} + ${lit(L)} - 1) / ${lit(L)})
end`,
  // A charge (a settle past the estimate) is owed past an empty bucket, however far (maxDebt).
  commit: ({ window: W, burst: C, limit: L, cost }, ctx, v) => `local k = ${cost}
${
  ctx.charge
    ? ''
    : `if k > ${lit(C)} then k = ${lit(C)} end
`
}local debt = ${v('d')} + k * ${lit(W)}
if debt > ${lit(ctx.charge ? maxDebt(W, L, C) : C * W)} then debt = ${lit(ctx.charge ? maxDebt(W, L, C) : C * W)} end
-- a debt charged past empty (a settle) is never lowered by a commit
if debt < ${v('d')} then debt = ${v('d')} end
${v('add')} = debt - ${v('d')}
${v('d')} = debt`,
  save: (m, ctx, v) => `${adoptLua(ctx.incarnations, `redis.call('HSET', key, '${INCARNATION_FIELD}', inc)`)}
local ttl = 0
${m.fields
  .map(
    (f) => `local ${f.id}_q = floor(${v(f)('d')} / ${lit(f.limit)})
if ${f.id}_q + 1 > ttl then ttl = ${f.id}_q + 1 end`,
  )
  .join('\n')}
redis.call('HSET', key, ${m.fields.map((f) => `${str(f.name)}, fmt('%d:%d', NOW + ${f.id}_q, ${v(f)('d')} - ${f.id}_q * ${lit(f.limit)})`).join(', ')})
-- other plans' buckets may need the key longer than these rules do: its TTL is never shortened
if redis.call('PTTL', key) < ttl + PAD then redis.call('PEXPIRE', key, ttl + PAD) end`,
  // '<W>:<L>:<C>:<inc>:<a>:<r>': the ticks the commit added and the TAT (a + r / L) it left
  receipt: (f, _ctx, v) =>
    `${str(`${f.name}:`)} .. fmt('%d:%d:%d', ${v('add')}, NOW + floor(${v('d')} / ${lit(f.limit)}), ${v('d')} - floor(${v('d')} / ${lit(f.limit)}) * ${lit(f.limit)})`,
};

/*
 * The give-back (AlgorithmUndo): TAT - inc ticks, kept as a + r / L with 0 <= r < L, only while the stored
 * TAT is still exactly the receipt's. The floor of a double quotient can be off by one near an integer,
 * so the remainder is corrected (the same steps in both twins).
 */
const undo = `
local function fg_undo(key, receipt, cost)
  for w, lim, cap, sfx, inc, a, r in string.gmatch(receipt, '(%d+):(%d+):(%d+)(@?[%w_%-]*):(%d+):(%d+):(%d+)') do
    local name = w .. ':' .. lim .. ':' .. cap .. sfx
    if redis.call('HGET', key, name) == a .. ':' .. r then
      local l = tonumber(lim)
      -- at most the increment the check added: a part of it when a settle gives back part of its estimate
      local back = cost(sfx) * tonumber(w)
      if back > tonumber(inc) then back = tonumber(inc) end
      local x = tonumber(r) - back
      local q = math.floor(x / l)
      local rem = x - q * l
      if rem < 0 then q, rem = q - 1, rem + l elseif rem >= l then q, rem = q + 1, rem - l end
      redis.call('HSET', key, name, string.format('%d:%d', tonumber(a) + q, rem))
    end
  end
end
`;

/**
 * The largest debt in ticks a charge leaves (docs/budgets.md): paid off at the limit's rate, one unit every
 * W / L ms, however many windows that takes, up to debtCapMs (about 35 years), and small enough that a
 * check's d + cost * W stays an exact integer.
 */
const maxDebt = (W: number, L: number, C: number): number => Math.min(Number.MAX_SAFE_INTEGER - C * W, debtCapMs(L) * L);

interface Tat {
  a: number;
  r: number;
}
type Tats = Map<string, Tat>;
/** The stored hash: the TATs by field, and the incarnation ('i') as text. */
type Stored = Map<string, Tat | string>;
interface State {
  f: Tats;
  /** The key's incarnation ('i'), or the one a save gives it. */
  incarnation: string | undefined;
  done: Set<string>;
  /** Per field: the ticks the commit added (for the undo receipt). */
  inc: Map<string, number>;
}

const fieldName = (j: number, ctx: FrameContext): string => ctx.field[j]!;

function debt(st: State, j: number, ctx: FrameContext): number {
  const t = st.f.get(fieldName(j, ctx));
  return t ? Math.max((t.a - ctx.now) * ctx.limit[j]! + t.r, 0) : 0;
}

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.window[j]!;
  const lim = ctx.limit[j]!;
  const cap = ctx.burst[j]!;
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
  const w = ctx.window[j]!;
  const lim = ctx.limit[j]!;
  const cap = ctx.burst[j]!;
  const debt0 = debt(st, j, ctx);
  // A charge (settle.ts) is owed past an empty bucket, however far (maxDebt), as the Lua's commit.
  // A debt charged past empty (a settle) is never lowered by a commit.
  const d = Math.max(
    ctx.charge ? Math.min(debt0 + cost * w, maxDebt(w, lim, cap)) : Math.min(debt0 + Math.min(cost, cap) * w, cap * w),
    debt0,
  );
  const q = Math.floor(d / lim);
  st.f.set(name, { a: ctx.now + q, r: d - q * lim });
  st.inc.set(name, d - debt0);
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Stored> | undefined {
  if (js.length === 0) return undefined;
  st.incarnation ??= ctx.incarnation;
  const value: Stored = new Map(st.f);
  if (st.incarnation !== undefined) value.set(INCARNATION_FIELD, st.incarnation);
  return savedHash(value, js, (j) => st.f.get(fieldName(j, ctx))!.a - ctx.now + 1, ctx);
}

function receiptOf(st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => {
    const name = fieldName(j, ctx);
    const t = st.f.get(name)!;
    return [name, `${name}:${st.inc.get(name)}:${t.a}:${t.r}`];
  });
}

function undoOn(stored: Stored | undefined, receipt: string, cost: (unit: string) => number): void {
  if (stored === undefined) return;
  type Item = [w: number, lim: number, cap: number, inc: number, a: number, r: number];
  for (const { nums, unit } of receiptItems(receipt)) {
    const [w, lim, cap, inc, a, r] = nums as Item;
    const name = `${w}:${lim}:${cap}${unitSuffix({ unit })}`;
    const t = stored.get(name);
    if (t === undefined || typeof t === 'string' || t.a !== a || t.r !== r) continue;
    const x = r - Math.min(cost(unit) * w, inc);
    let q = Math.floor(x / lim);
    let rem = x - q * lim;
    if (rem < 0) [q, rem] = [q - 1, rem + lim];
    else if (rem >= lim) [q, rem] = [q + 1, rem - lim];
    stored.set(name, { a: a + q, r: rem });
  }
}

export const tokenBucket: Algorithm<State, Stored> = {
  name: 'token-bucket',
  tag: 'tb1',
  lua,
  undo: { undo, incarnation: HASH_INCARNATION, twin: { receipt: receiptOf, undo: undoOn, incarnation: hashIncarnation } },
  twin: {
    load: (stored) => {
      const f: Tats = new Map();
      let incarnation: string | undefined;
      for (const [k, t] of stored ?? []) {
        if (typeof t === 'string') incarnation = t;
        else f.set(k, { ...t });
      }
      return { f, incarnation, done: new Set(), inc: new Map() };
    },
    evaluate,
    commit,
    save,
  },
  ruleOptions: ['burst'],
  capacity: (rule) => rule.burst,
  field: (rule) => `${rule.windowMs}:${rule.limit}:${rule.burst}${unitSuffix(rule)}`,
  validate: (rule, at) => {
    if ((rule.burst + rule.limit) * rule.windowMs > Number.MAX_SAFE_INTEGER) {
      throw new ConfigError(
        `${at}.burst`,
        `(burst + limit) * window must stay below 2^53 for exact token-bucket arithmetic; got burst ${rule.burst}, limit ${rule.limit}, window ${rule.windowMs} ms`,
      );
    }
  },
};
