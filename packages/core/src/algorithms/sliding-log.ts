import { ConfigError } from '../errors';
import type { Algorithm, FrameContext, PairEval, SavedValue } from './types';

/*
 * Sliding log (the DomainTools design): one Redis list per identifier holding the timestamps (ms) of the
 * most recent admitted units, newest first, trimmed to the largest limit among the identifier's rules.
 * Rule (W, L) admits a cost k at NOW iff fewer than L - k + 1 of the newest L entries are younger than W,
 * i.e. iff the (L - k + 1)-th newest entry is at least W old. So the answer is exact in every window
 * of length W, and so is the retry time: that entry leaves the window at entry + W.
 * A cost of k adds k entries; a denied check adds nothing (unless `penalty`). Memory grows with the
 * largest limit, so limits are capped at MAX_LOG_LIMIT: this algorithm is for small limits.
 *
 * Undo receipt (Cluster, DESIGN.md invariant 2): '<timestamp>:<count>', the entries the commit pushed.
 * The undo removes up to that many entries equal to the timestamp (LREM, newest first). Entries of the
 * same millisecond are interchangeable, so that leaves what the other checks alone would have left. The
 * trim cannot make this over-admit: a check admitted with cost k had its (L_i - k + 1)-th newest entry
 * outside window i for every rule i, so the k oldest entries a push trims were outside every window, and
 * if the check's own entries were trimmed since, every entry of that millisecond is outside every window.
 */
const MAX_LOG_LIMIT = 10_000;

const lua = `
local function fg_load(key)
  local maxL = 0
  for j = 1, NR do
    if L[j] > maxL then maxL = L[j] end
  end
  local raw = redis.call('LRANGE', key, 0, maxL - 1)
  local e = {}
  for i = 1, #raw do e[i] = tonumber(raw[i]) end
  return { e = e, add = 0, done = false }
end

-- -> available now, ms until no entry is in the window, ms until cost fits (0: fits now)
local function fg_eval(st, j, cost)
  local w, lim = W[j], L[j]
  local e = st.e
  local n, reset = 0, 0
  local m = #e
  if m > lim then m = lim end
  for i = 1, m do
    local left = e[i] + w - NOW
    if left > 0 then
      n = n + 1
      if left > reset then reset = left end
    end
  end
  local retry = 0
  if cost > lim then
    retry = w
  elseif cost > 0 and n + cost > lim then
    retry = e[lim - cost + 1] + w - NOW
    if retry < 1 then retry = 1 end
  end
  return lim - n, reset, retry
end

local function fg_commit(st, j, cost)
  if st.done then return end
  st.done = true
  local maxL = 0
  for k = 1, NR do
    if L[k] > maxL then maxL = L[k] end
  end
  local add = cost
  if add > maxL then add = maxL end
  local e = {}
  for i = 1, add do e[i] = NOW end
  -- Copy what the list holds, not maxL slots: a short list under a large limit stays O(its length).
  local keep = math.min(maxL - add, #st.e)
  for i = 1, keep do e[add + i] = st.e[i] end
  st.e, st.add = e, add
end

local function fg_save(key, st, js)
  if st.add == 0 then return end
  local keep, ttl = 0, 0
  for _, j in ipairs(js) do
    if L[j] > keep then keep = L[j] end
    if W[j] > ttl then ttl = W[j] end
  end
  local now = string.format('%d', NOW)
  local left = st.add
  while left > 0 do
    local batch, chunk = {}, math.min(left, 1000)
    for i = 1, chunk do batch[i] = now end
    redis.call('LPUSH', key, unpack(batch))
    left = left - chunk
  end
  redis.call('LTRIM', key, 0, keep - 1)
  redis.call('PEXPIRE', key, ttl + PAD)
end
`;

/* Receipt: the timestamp and the number of entries pushed (cost, capped at the largest limit). */
const receipt = `
local function fg_receipt(st, js, cost)
  return string.format('%d:%d', NOW, st.add)
end
`;

const undo = `
local function fg_undo(key, receipt, cost)
  local at, count = string.match(receipt, '^(%d+):(%d+)$')
  if at and tonumber(count) > 0 then redis.call('LREM', key, tonumber(count), at) end
end
`;

interface State {
  e: number[];
  add: number;
  done: boolean;
}

const maxLimit = (ctx: FrameContext): number => Math.max(...ctx.L);

function evaluate(st: State, j: number, cost: number, ctx: FrameContext): PairEval {
  const w = ctx.W[j]!;
  const lim = ctx.L[j]!;
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
  st.e = [...new Array<number>(add).fill(ctx.now), ...st.e.slice(0, maxL - add)];
  st.add = add;
}

function save(st: State, js: readonly number[], ctx: FrameContext): SavedValue<number[]> | undefined {
  if (st.add === 0) return undefined;
  const keep = Math.max(...js.map((j) => ctx.L[j]!));
  const ttl = Math.max(...js.map((j) => ctx.W[j]!));
  return { value: st.e.slice(0, keep), ttlMs: ttl + ctx.pad };
}

function undoOn(stored: number[] | undefined, receipt: string, _cost: number): void {
  const [at, count] = receipt.split(':').map(Number) as [number, number];
  let left = count;
  for (let i = 0; stored !== undefined && i < stored.length && left > 0; ) {
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
  undo: { receipt, undo, twin: { receipt: (st, _js, ctx) => `${ctx.now}:${st.add}`, undo: undoOn } },
  twin: {
    load: (stored, ctx) => ({ e: (stored ?? []).slice(0, maxLimit(ctx)), add: 0, done: false }),
    evaluate,
    commit,
    save,
  },
  param: () => 0,
  field: () => '',
  validate: (rule, at) => {
    if (rule.limit > MAX_LOG_LIMIT) {
      throw new ConfigError(
        `${at}.limit`,
        `must be at most ${MAX_LOG_LIMIT} with algorithm 'sliding-log' (it stores one timestamp per unit); got ${rule.limit}. Use 'sliding-window' for large limits`,
      );
    }
  },
};
