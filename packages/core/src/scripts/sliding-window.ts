import { ConfigError } from '../kernel/errors';
import { indent, lit, str } from './compiler/lua';
import type { Algorithm, FieldSpec, FrameContext, Names, PairEval, SavedValue, LuaTemplates } from './types';
import { hashIncarnation, hashReceipt, receiptItems, savedHash } from './hash-state';
import { adoptLua, HASH_INCARNATION, INCARNATION_FIELD } from './incarnation';
import { unitSuffix } from './units';
import { charged, chargedLua, withDebt, withDebtLua } from './debt';

/*
 * Sliding window as a ring of time buckets (the Redback design): a rule's window W is cut into P buckets
 * of B = W / P ms (P = `precision`; W % P === 0 is checked at construction, so B is an integer). The
 * last W ms always overlap P + 1 aligned buckets, so a ring keeps P + 1 counts. A check sums every
 * bucket of age 0..P (age = current bucket - bucket), counting the partly covered oldest one whole:
 * never more than `limit` in ANY window of length W, and at most one bucket's worth of under-admission.
 *
 * Layout 2 (tag sw2): one hash field per (window, precision), so rules sharing both share one ring,
 * counted once ('<W>:<P>@<unit>' for rules of another unit than requests, units.ts). Field '<W>:<P>' holds P + 2 integers, MessagePack-encoded one after the other:
 *   last, c[0], c[1], ..., c[P]    last = the newest bucket written; c[k] = the count of bucket last - k
 * The counts are kept newest first, so reading the ring needs no modular arithmetic: when the current
 * bucket is d buckets past `last`, c[k] has age d + k and only c[0 .. P - d] are still in the window.
 * Advancing shifts the counts by d. While a settle's charge past the limit is being paid off, one more
 * integer follows the counts: the time it is (debt.ts), counted beside the ring's sum until then.
 * MessagePack because Redis's cmsgpack decodes a ring in one C call:
 * layout 1 kept '<last>,<c0>,...' text, and splitting it with string.gmatch cost ~40 µs of Redis CPU per
 * check of 3 rules x 2 identifiers, more than everything else the script does. Small counts take one
 * byte each, so a ring of precision 10 is about 20 bytes.
 * Buckets older than current - P are ignored when read and dropped when the ring advances, so no
 * decision rests on the key's TTL. When the clock steps back (current < last), buckets ahead of the
 * current one count as age 0, and a commit adds to bucket `last`.
 * Field 'i' holds the key's incarnation, when a check that answers undo receipts wrote it (incarnation.ts).
 * A check writes only its own rules' rings: another plan's rings (docs/plans.md) stay as they are, and a
 * save never shortens the key's TTL, which they may need longer than these rules do.
 *
 * Undo receipt (Cluster, docs/design.md section 6): '<W>:<P>:<bucket>' per ring, the bucket the cost went
 * into (the ring's `last` after the commit). The undo subtracts the cost from that bucket, clamped at 0,
 * only while the ring still holds it (last - P <= bucket <= last): once the ring has moved past it, the
 * cost has left the window anyway. Counts in one bucket are additive, so this is exactly the state the
 * other admitted checks would have left: never more admitted than without the undone check.
 */

/**
 * Lua setting `e` to ring `r` as stored: its integers MessagePack-encoded one after the other, the bytes
 * `cmsgpack.pack(unpack(r))` makes. That call makes a Lua string of every integer and then joins them, about
 * a quarter of what a ring costs a check (redis-server under callgrind: 7,650 instructions a ring, against
 * 3,270 for the path below). A count from 0 to 127 is its own byte in MessagePack, and a ring's counts are
 * never negative, so while their sum `n` is at most 127 and no debt follows them, the counts are one
 * `string.char` and `last`, when it is the current bucket (it is, once committed, unless the clock stepped
 * back), is `_enc`, encoded once per call for every identifier's ring of the field. The same bytes either
 * way (test/scripts.test.ts replays both against the twin). The counts reach string.char through unpack, not
 * as written-out arguments, which would need a register each: a settle script of 32 rules of precision 90
 * was more than Lua compiles ("function or expression too complex").
 */
function saveRing(f: FieldSpec, x: Names): string {
  return `if ${x('n')} <= 127 and ${x('r')}[1] == ${f.id}_cur and ${x('r')}[${lit(f.precision + 3)}] == nil then
  if ${f.id}_enc == nil then ${f.id}_enc = cmsgpack.pack(${f.id}_cur) end
  ${x('e')} = ${f.id}_enc .. string.char(unpack(${x('r')}, 2, ${lit(f.precision + 2)}))
else
  ${x('e')} = cmsgpack.pack(unpack(${x('r')}))
end`;
}

/*
 * The Lua (script.ts builds a limiter's script from these). Per field (ring) f: f_cur, the current bucket,
 * once per call. Its values: r the ring as read (nil without one), n the sum of the counts still in the
 * window, d = cur - last (0 without a ring), y the Lua index (2 = c[0]) of the newest non-zero count, or
 * nil. Identifier-wide: `kept`, how long the key already lives at least (to when its newest ring's oldest
 * bucket leaves), so the PEXPIRE is skipped when the new state needs no longer, and `inc`, its incarnation.
 */
const lua: LuaTemplates = {
  vars: ['r', 'n', 'd', 'y', 'u'],
  idVars: ['kept', 'inc'],
  // `_enc`: the current bucket MessagePack-encoded, made by the first save that needs it (saveRing).
  setup: (f) => `local ${f.id}_cur, ${f.id}_enc = floor(NOW / ${lit(f.window / f.precision)}), nil`,
  load: (m, _ctx, v) => `local raw = redis.call('HMGET', key, ${m.fields.map((f) => str(f.name)).join(', ')}, '${INCARNATION_FIELD}')
local kept
local inc = raw[${m.fields.length + 1}] or nil
${m.fields
  .map((f, k) => {
    const x = v(f);
    return `local ${x('r')}, ${x('n')}, ${x('d')}, ${x('y')}, ${x('u')} = nil, 0, 0, nil, 0
if raw[${k + 1}] then
  local r = { cmsgpack.unpack(raw[${k + 1}]) }
  ${x('r')} = r
  ${x('u')} = r[${lit(f.precision + 3)}] or 0
  ${x('d')} = ${f.id}_cur - r[1]
  local top = ${lit(f.precision + 2)}
  if ${x('d')} > 0 then top = top - ${x('d')} end
  for k = 2, top do
    local c = r[k]
    if c ~= 0 then
      ${x('n')} = ${x('n')} + c
      if ${x('y')} == nil then ${x('y')} = k end
    end
  end
  -- the key lives at least until this ring's newest bucket leaves
  local left = (r[1] + ${lit(f.precision + 1)}) * ${lit(f.window / f.precision)} - NOW
  if kept == nil or left > kept then kept = left end
end`;
  })
  .join('\n')}`,
  evaluate: ({ limit, window, field: { id, precision } }, _ctx, v, cost) => {
    const bucket = lit(window / precision);
    return `avail = ${lit(limit)} - ${v('n')}
if avail < 0 then avail = 0 end
reset, retry = 0, 0
if ${v('y')} then
  -- bucket last - (y - 2), or the current one when the clock stepped back
  local bkt = ${id}_cur - ${v('d')} - ${v('y')} + 2
  if bkt > ${id}_cur then bkt = ${id}_cur end
  reset = (bkt + ${lit(precision + 1)}) * ${bucket} - NOW
end
if ${cost} > ${lit(limit)} then
  retry = ${lit(window)}
elseif ${cost} > 0 and ${v('n')} + ${cost} > ${lit(limit)} then
  -- the oldest buckets leave first: bucket x leaves when bucket x + P + 1 begins
  local left, ring, top = ${v('n')}, ${v('r')}, ${lit(precision + 2)}
  if ${v('d')} > 0 then top = top - ${v('d')} end
  for k = top, 2, -1 do
    left = left - ring[k]
    if left + ${cost} <= ${lit(limit)} then
      local bkt = ${id}_cur - ${v('d')} - k + 2
      if bkt > ${id}_cur then bkt = ${id}_cur end
      retry = (bkt + ${lit(precision + 1)}) * ${bucket} - NOW
      break
    end
  end
end
${withDebtLua(v('u'), v('n'), cost, limit, window)}`;
  },
  commit: ({ id, precision, cost }, _ctx, v) => `if not ${v('r')} then ${v('r')} = { ${id}_cur${', 0'.repeat(precision + 1)} } end
if ${v('d')} > 0 then
  local ring, shift = ${v('r')}, ${v('d')}
  for k = ${lit(precision + 2)}, 2, -1 do
    if k - shift >= 2 then ring[k] = ring[k - shift] else ring[k] = 0 end
  end
  ring[1] = ${id}_cur
  ${v('d')} = 0
end
${v('r')}[2] = ${v('r')}[2] + ${cost}
${v('n')} = ${v('n')} + ${cost}
if ${cost} > 0 then ${v('y')} = 2 end`,
  // A settle's charge past the limit (ctx.charge) sets its debt with the limit of the mask's first rule of
  // the ring, as the twin's commit does, paid off from when the current bucket leaves; a ring carries its
  // debt while it is owed.
  save: (m, ctx, v) => `local ttl = 0
local ${m.fields.map((f) => v(f)('e')).join(', ')}
${m.fields
  .map((f) => {
    const [r, u] = [v(f)('r'), v(f)('u')];
    const rule = m.rules.find((x) => x.field === f)!;
    return `do
  local left = (${r}[1] + ${lit(f.precision + 1)}) * ${lit(f.window / f.precision)} - NOW
${
  ctx.charge
    ? `${indent(chargedLua(u, v(f)('n'), f.cost, 'left', rule.limit, rule.window), 2)}
`
    : ''
}  if ${u} > NOW then
    ${r}[${lit(f.precision + 3)}] = ${u}
    if ${u} - NOW > left then left = ${u} - NOW end
  else
    ${r}[${lit(f.precision + 3)}] = nil
  end
  if left > ttl then ttl = left end
${indent(saveRing(f, v(f)), 2)}
end`;
  })
  .join('\n')}
${adoptLua(ctx.incarnations, `redis.call('HSET', key, '${INCARNATION_FIELD}', inc)`)}
redis.call('HSET', key, ${m.fields.map((f) => `${str(f.name)}, ${v(f)('e')}`).join(', ')})
-- other plans' rings may need the key longer than these rules do: its TTL is never shortened
if (kept == nil or ttl > kept) and redis.call('PTTL', key) < ttl + PAD then redis.call('PEXPIRE', key, ttl + PAD) end`,
  // the bucket the cost went into: '<W>:<P>:<bucket>'
  receipt: (f, _ctx, v) => `${str(`${f.name}:`)} .. fmt('%d', ${v('r')}[1])`,
};

/* The give-back (AlgorithmUndo): the cost, from each receipt's bucket while the ring still holds it. */
const undo = `
local function fg_undo(key, receipt, cost)
  for w, p, sfx, bucket in string.gmatch(receipt, '(%d+):(%d+)(@?[%w_%-]*):(%d+)') do
    local name = w .. ':' .. p .. sfx
    local raw = redis.call('HGET', key, name)
    if raw then
      local r = { cmsgpack.unpack(raw) }
      local n = tonumber(p) + 2
      local k = r[1] - tonumber(bucket) + 2
      if k >= 2 and k <= n then
        local c = r[k] - cost(sfx)
        if c < 0 then c = 0 end
        r[k] = c
        redis.call('HSET', key, name, cmsgpack.pack(unpack(r)))
      end
    end
  end
end
`;

/** A ring: `last`, the newest bucket written, and c[k] = the count of bucket last - k (k = 0..P). */
interface Ring {
  last: number;
  c: number[];
  /** While a debt is owed: when it is paid off (debt.ts). */
  u?: number;
}
type Rings = Map<string, Ring>;
/** The stored hash: the rings by field, and the incarnation ('i') as text. */
type Stored = Map<string, Ring | string>;
interface View {
  n: number;
  cur: number;
  d: number;
  /** Index in c of the newest non-zero count, or -1. */
  y: number;
}
interface State {
  f: Rings;
  /** The key's incarnation ('i'), or the one a save gives it. */
  inc: string | undefined;
  done: Set<string>;
  memo: Map<string, View>;
}

const ringName = (j: number, ctx: FrameContext): string => ctx.field[j]!;

/** The twin of sw_view (memoised per ring for the call, like the Lua). */
function view(st: State, j: number, ctx: FrameContext): View {
  const name = ringName(j, ctx);
  let m = st.memo.get(name);
  if (m) return m;
  const p = ctx.precision[j]!;
  const cur = Math.floor(ctx.now / (ctx.window[j]! / p));
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
  const lim = ctx.limit[j]!;
  const p = ctx.precision[j]!;
  const b = ctx.window[j]! / p;
  const m = view(st, j, ctx);
  let n = m.n;
  // The start of bucket (last - k) + P + 1, or of the current bucket's when the clock stepped back.
  const leaves = (k: number): number => (Math.min(m.cur - m.d - k, m.cur) + p + 1) * b - ctx.now;
  const reset = m.y >= 0 ? leaves(m.y) : 0;
  let retry = 0;
  if (cost > lim) retry = ctx.window[j]!;
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
  return withDebt([Math.max(lim - m.n, 0), reset, retry], st.f.get(ringName(j, ctx))?.u ?? 0, m.n, cost, lim, ctx.window[j]!, ctx.now);
}

function commit(st: State, j: number, cost: number, ctx: FrameContext): void {
  const name = ringName(j, ctx);
  if (st.done.has(name)) return;
  st.done.add(name);
  const p = ctx.precision[j]!;
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
  // A settle's charge past the limit: its debt (debt.ts), paid off from when this bucket leaves the window.
  if (ctx.charge) {
    const u = charged(r.u ?? 0, m.n, cost, (r.last + p + 1) * (ctx.window[j]! / p) - ctx.now, ctx.limit[j]!, ctx.window[j]!, ctx.now);
    if (u > 0) r.u = u;
  }
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<Stored> | undefined {
  if (js.length === 0) return undefined;
  st.inc ??= ctx.incarnation;
  // A ring carries its debt while it is owed.
  for (const j of js) {
    const r = st.f.get(ringName(j, ctx))!;
    if (r.u !== undefined && r.u <= ctx.now) delete r.u;
  }
  const value: Stored = new Map(st.f);
  if (st.inc !== undefined) value.set(INCARNATION_FIELD, st.inc);
  return savedHash(
    value,
    js,
    (j) => {
      const p = ctx.precision[j]!;
      const r = st.f.get(ringName(j, ctx))!;
      return Math.max((r.last + p + 1) * (ctx.window[j]! / p) - ctx.now, (r.u ?? 0) - ctx.now);
    },
    ctx,
  );
}

function receiptOf(st: State, js: readonly number[], ctx: FrameContext): string {
  return hashReceipt(js, (j) => {
    const name = ringName(j, ctx);
    return [name, `${name}:${st.f.get(name)!.last}`];
  });
}

function undoOn(stored: Stored | undefined, receipt: string, cost: (unit: string) => number): void {
  for (const { nums, unit } of receiptItems(receipt)) {
    const [w, p, bucket] = nums as [number, number, number];
    const ring = stored?.get(`${w}:${p}${unitSuffix({ unit })}`);
    if (ring === undefined || typeof ring === 'string') continue;
    const k = ring.last - bucket;
    if (k < 0 || k > p) continue;
    ring.c[k] = Math.max(ring.c[k]! - cost(unit), 0);
  }
}

export const slidingWindow: Algorithm<State, Stored> = {
  name: 'sliding-window',
  tag: 'sw2',
  lua,
  undo: { undo, incarnation: HASH_INCARNATION, twin: { receipt: receiptOf, undo: undoOn, incarnation: hashIncarnation } },
  twin: {
    load: (stored) => {
      const f: Rings = new Map();
      let inc: string | undefined;
      for (const [k, r] of stored ?? []) {
        if (typeof r === 'string') inc = r;
        else f.set(k, r.u === undefined ? { last: r.last, c: [...r.c] } : { last: r.last, c: [...r.c], u: r.u });
      }
      return { f, inc, done: new Set(), memo: new Map() };
    },
    evaluate,
    commit,
    save,
  },
  ruleOptions: ['precision'],
  capacity: (rule) => rule.limit,
  field: (rule) => `${rule.windowMs}:${rule.precision}${unitSuffix(rule)}`,
  validate: (rule, at) => {
    if (rule.windowMs % rule.precision !== 0) {
      throw new ConfigError(
        `${at}.precision`,
        `must divide the window evenly (sliding-window buckets are window / precision ms); got precision ${rule.precision} for a window of ${rule.windowMs} ms`,
      );
    }
  },
};
