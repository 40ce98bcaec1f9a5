import { ConfigError } from '../kernel/errors';
import type { Algorithm, FrameContext, PairEval, SavedValue, CompileContext, LuaTemplates } from './types';
import { lit } from './compiler/lua';
import { adoptLua } from './incarnation';
import { DEFAULT_UNIT } from '../config/rules';

/** The furthest a charge dates its entries ahead of NOW: about 35 years (debt.ts), below the incarnation's -2^52. */
const DEBT_CAP_MS = 2 ** 40;

/*
 * Sliding log (the DomainTools design): one Redis list per identifier holding the timestamps (ms) of the
 * most recent admitted units, newest first, trimmed to the largest limit among the identifier's rules.
 * Rule (W, L) admits a cost k at NOW iff fewer than L - k + 1 of the newest L entries are younger than W,
 * i.e. iff the (L - k + 1)-th newest entry is at least W old. So the answer is exact in every window
 * of length W, and so is the retry time: that entry leaves the window at entry + W.
 * A cost of k adds k entries; a denied check adds nothing (unless `penalty`). Memory and Redis CPU grow
 * with the largest limit (the script reads the whole log): measured with a full log, 40 µs of Redis CPU
 * per check at limit 100, 314 µs at 1,000, 2.9 ms at 10,000. A check a client can make cost milliseconds
 * of the Redis every process shares is a denial-of-service lever (docs/security.md), so limits are capped
 * at MAX_LOG_LIMIT: this algorithm is for small limits.
 *
 * Undo receipt (Cluster, docs/design.md section 6): '<timestamp>:<count>', the entries the commit pushed.
 * The undo removes up to that many entries equal to the timestamp (LREM, newest first). Entries of the
 * same millisecond are interchangeable, so that leaves what the other checks alone would have left. The
 * trim cannot make this over-admit: a check admitted with cost k had its (L_i - k + 1)-th newest entry
 * outside window i for every rule i, so the k oldest entries a push trims were outside every window, and
 * if the check's own entries were trimmed since, every entry of that millisecond is outside every window.
 *
 * Plans (docs/plans.md) share the one log. A save trims it to the largest limit of its own rules, or to the
 * entries it held before when that is more (another plan with a larger limit keeps them), and never
 * shortens the key's TTL (another plan's windows may be longer): a check under one plan never forgets an
 * entry another plan still counts. The list's length stays at most the largest limit any rule set had.
 *
 * A settle's charge past a rule's limit (debt.ts) dates the entries it pushes later: at the newest entry
 * (when a debt is already owed) or NOW, plus the time the rule's limit needs for the units past it
 * (ceil(x * W / L), the largest over the rules). A log of at most the largest limit then stays full until the
 * whole charge is paid off at the limit's rate, however many windows that takes.
 *
 * The key's incarnation (incarnation.ts), when a check that answers undo receipts wrote it, is the last
 * item: the incarnation negated, which every reader takes for a timestamp outside every window (it is
 * below -2^52) and which sorts after every entry. A save keeps it last.
 */
const MAX_LOG_LIMIT = 1_000;

/*
 * The Lua (script.ts builds a limiter's script from these). One field for all rules (the log), whose values
 * are e, the newest entries as numbers (at most MAXL, the largest limit of the limiter's rules), and add,
 * the entries a commit pushed (0 before). What a save keeps and for how long depends on the identifier's
 * own rules (the largest of their limits, the longest of their windows) and on what the key held. `inc`,
 * the key's incarnation, is read by the save (the list's last item) when it pushes.
 */
const maxL = (ctx: CompileContext): number => Math.max(...ctx.rules.map((r) => r.limit));

/**
 * A charge's date for its entries (the twin: chargeDate): the newest entry's, when it is still ahead of NOW
 * (a debt is owed: the whole charge is past the limit), else NOW; plus, per rule, the time its limit needs
 * for the units past it, the largest.
 */
function debtLua(ctx: CompileContext, v: (name: string) => string, cost: string): string {
  const rules = ctx.rules.map(
    (r) => `do
  local n = 0
  for i = 1, math.min(#log, ${lit(r.limit)}) do
    if log[i] + ${lit(r.window)} > NOW then n = n + 1 end
  end
  local x = ${cost}
  if not owing then x = n + ${cost} - ${lit(r.limit)} end
  if x > 0 then
    local s = floor((x * ${lit(r.window)} + ${lit(r.limit - 1)}) / ${lit(r.limit)})
    if s > shift then shift = s end
  end
end`,
  );
  return `local log, shift = ${v('e')}, 0
local owing = log[1] ~= nil and log[1] > NOW
${rules.join('\n')}
if shift > 0 then
  if owing then ${v('at')} = log[1] end
  ${v('at')} = ${v('at')} + shift
  if ${v('at')} - NOW > ${lit(DEBT_CAP_MS)} then ${v('at')} = NOW + ${lit(DEBT_CAP_MS)} end
end
`;
}

const lua: LuaTemplates = {
  vars: ['e', 'add', 'at'],
  idVars: ['inc'],
  load: (m, ctx, v) => {
    const x = v(m.fields[0]!);
    return `local raw = redis.call('LRANGE', key, 0, ${lit(maxL(ctx) - 1)})
local inc
local ${x('e')}, ${x('add')}, ${x('at')} = {}, 0, NOW
for i = 1, #raw do ${x('e')}[i] = tonumber(raw[i]) end`;
  },
  evaluate: ({ window: W, limit: L }, _ctx, v, cost) => `local log, n = ${v('e')}, 0
reset = 0
local m = #log
if m > ${lit(L)} then m = ${lit(L)} end
for i = 1, m do
  local left = log[i] + ${lit(W)} - NOW
  if left > 0 then
    n = n + 1
    if left > reset then reset = left end
  end
end
avail, retry = ${lit(L)} - n, 0
if ${cost} > ${lit(L)} then
  retry = ${lit(W)}
elseif ${cost} > 0 and n + ${cost} > ${lit(L)} then
  -- the (L - cost + 1)-th newest entry must leave the window first
  retry = log[${lit(L)} - ${cost} + 1] + ${lit(W)} - NOW
  if retry < 1 then retry = 1 end
end`,
  commit: (f, ctx, v) => `local count = ${f.cost}
if count > ${lit(maxL(ctx))} then count = ${lit(maxL(ctx))} end
${ctx.charge ? debtLua(ctx, v, f.cost) : ''}local pushed = {}
for i = 1, count do pushed[i] = ${v('at')} end
-- copy what the list holds, not MAXL slots: a short list under a large limit stays O(its length)
local keep = ${lit(maxL(ctx))} - count
if #${v('e')} < keep then keep = #${v('e')} end
for i = 1, keep do pushed[count + i] = ${v('e')}[i] end
${v('e')}, ${v('add')} = pushed, count`,
  save: (m, ctx, v) => {
    const x = v(m.fields[0]!);
    return `local add = ${x('add')}
if add > 0 then
  -- the incarnation: the list's last item when it is negative
  local tail = redis.call('LINDEX', key, -1)
  if tail and string.sub(tail, 1, 1) == '-' then inc = string.sub(tail, 2) else tail = nil end
  ${adoptLua(ctx.incarnations, '')}
  local now = fmt('%d', ${x('at')})
  local left, len = add, 0
  while left > 0 do
    local batch, chunk = {}, math.min(left, 1000)
    for i = 1, chunk do batch[i] = now end
    len = redis.call('LPUSH', key, unpack(batch))
    left = left - chunk
  end
  -- keep the largest limit of these rules, or what the log held before when that is more
  local n, keep = len, ${lit(Math.max(...m.rules.map((r) => r.limit)))}
  if tail then n = n - 1 end
  if n - add > keep then keep = n - add end
  if n > keep then
    if tail then
      redis.call('LSET', key, keep, tail)
      redis.call('LTRIM', key, 0, keep)
    else
      redis.call('LTRIM', key, 0, keep - 1)
    end
  end
  if inc and not tail then redis.call('RPUSH', key, '-' .. inc) end
  -- other plans' windows may need the key longer than these rules do: its TTL is never shortened
  local ttl = ${x('at')} - NOW + ${lit(Math.max(...m.rules.map((r) => r.window)))} + PAD
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end`;
  },
  // '<timestamp>:<entries pushed>'
  receipt: (_f, _ctx, v) => `fmt('%d:%d', ${v('at')}, ${v('add')})`,
};

/*
 * The give-back (AlgorithmUndo): up to `count` entries of the receipt's millisecond (LREM), or the part a
 * settle gives back. The log counts one unit (a limiter's rules of several units are refused), so the
 * cost is the one number for every unit. LREM of 0 would remove every entry: never sent.
 */
const undo = `
local function fg_undo(key, receipt, cost)
  local at, count = string.match(receipt, '^(%d+):(%d+)$')
  if not at then return end
  local n = tonumber(count)
  if cost('') < n then n = cost('') end
  if n > 0 then redis.call('LREM', key, n, at) end
end
`;

/* The incarnation: the list's last item, negated, when it is negative (the twin: incarnationOf). */
const incarnation = `
local function fg_inc(key)
  local tail = redis.call('LINDEX', key, -1)
  if tail and string.sub(tail, 1, 1) == '-' then return string.sub(tail, 2) end
  return ''
end
`;

interface State {
  /** The stored list, whole (entries, then the incarnation if any). */
  all: readonly number[];
  /** The newest entries, at most the largest limit: what the rules read. */
  e: number[];
  add: number;
  /** The date of the entries a commit pushed: NOW, or later for a charge past the limit. */
  at: number;
  done: boolean;
}

/** The twin of debtLua: the date of a charge's entries. */
function chargeDate(st: State, cost: number, ctx: FrameContext): number {
  const owing = st.e[0] !== undefined && st.e[0] > ctx.now;
  let shift = 0;
  ctx.limit.forEach((lim, j) => {
    const w = ctx.window[j]!;
    const n = st.e.slice(0, lim).filter((t) => t + w > ctx.now).length;
    const x = owing ? cost : n + cost - lim;
    if (x > 0) shift = Math.max(shift, Math.floor((x * w + (lim - 1)) / lim));
  });
  if (shift === 0) return ctx.now;
  return Math.min((owing ? st.e[0]! : ctx.now) + shift, ctx.now + DEBT_CAP_MS);
}

function incarnationOf(stored: readonly number[] | undefined): string | undefined {
  const last = stored?.[stored.length - 1];
  return last !== undefined && last < 0 ? String(-last) : undefined;
}

const maxLimit = (ctx: FrameContext): number => Math.max(...ctx.limit);

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.window[j]!;
  const lim = ctx.limit[j]!;
  let n = 0;
  let reset = 0;
  for (const t of st.e.slice(0, lim)) {
    const left = t + w - ctx.now;
    if (left > 0) {
      n++;
      reset = Math.max(reset, left);
    }
  }
  let retry = 0;
  if (cost > lim) retry = w;
  else if (cost > 0 && n + cost > lim) retry = Math.max(st.e[lim - cost]! + w - ctx.now, 1);
  return [lim - n, reset, retry];
}

function commit(st: State, _j: number, cost: number, ctx: FrameContext): void {
  if (st.done) return;
  st.done = true;
  const maxL = maxLimit(ctx);
  const add = Math.min(cost, maxL);
  if (ctx.charge) st.at = chargeDate(st, cost, ctx);
  st.e = [...new Array<number>(add).fill(st.at), ...st.e.slice(0, maxL - add)];
  st.add = add;
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<number[]> | undefined {
  if (st.add === 0) return undefined;
  const stored = incarnationOf(st.all);
  const inc = stored ?? ctx.incarnation;
  const entries = stored === undefined ? st.all : st.all.slice(0, -1);
  const keep = Math.max(...js.map((j) => ctx.limit[j]!), entries.length);
  const value = [...new Array<number>(st.add).fill(st.at), ...entries].slice(0, keep);
  if (inc !== undefined) value.push(-Number(inc));
  const ttl = st.at - ctx.now + Math.max(...js.map((j) => ctx.window[j]!));
  return { value, ttlMs: ttl + ctx.pad };
}

function undoOn(stored: number[] | undefined, receipt: string, cost: (unit: string) => number): void {
  const [at, count] = receipt.split(':').map(Number) as [number, number];
  let left = Math.min(count, cost(DEFAULT_UNIT));
  for (let i = 0; stored !== undefined && i < stored.length && left > 0;) {
    if (stored[i] === at) {
      stored.splice(i, 1);
      left--;
    } else i++;
  }
}

export const slidingLog: Algorithm<State, number[]> = {
  name: 'sliding-log',
  tag: 'sl1',
  lua,
  undo: {
    undo,
    incarnation,
    twin: { receipt: (st, js) => (js.length === 0 ? '' : `${st.at}:${st.add}`), undo: undoOn, incarnation: incarnationOf },
  },
  twin: {
    load: (stored, ctx) => ({ all: stored ?? [], e: (stored ?? []).slice(0, maxLimit(ctx)), add: 0, at: ctx.now, done: false }),
    evaluate,
    commit,
    save,
  },
  ruleOptions: [],
  capacity: (rule) => rule.limit,
  field: () => '',
  validate: (rule, at) => {
    if (rule.limit > MAX_LOG_LIMIT) {
      throw new ConfigError(
        `${at}.limit`,
        `must be at most ${MAX_LOG_LIMIT} with algorithm 'sliding-log' (it stores and reads one timestamp per unit: ~0.3 ms of Redis CPU per check at 1,000); got ${rule.limit}. Use 'sliding-window' for large limits`,
      );
    }
  },
};
