import type { Rule } from '../rules';
import type { Algorithm, FrameContext, PairEval, Twin } from './types';

/*
 * The frame every check runs in, once in Lua (inside Redis) and once in JavaScript (the memory store).
 * It reads every identifier's block and state, evaluates every applicable (identifier x rule) pair, and
 * consumes only when every pair admits the cost: all or nothing, in one script call.
 *
 * KEYS: per identifier i (1-based): KEYS[2i-1] its state key, KEYS[2i] its block key.
 * ARGV[1] op: 'c' check (consumes when allowed) | 'p' peek (consumes nothing)
 * ARGV[2] cost (integer >= 0)
 * ARGV[3] penalty: '1' makes a denied check consume too, '0' not
 * ARGV[4] now (ms); '' in production, where the script reads Redis TIME (one clock for every app server)
 * ARGV[5] TTL padding in ms (0 in production; test mode pads, as its clock is not Redis's)
 * ARGV[6] number of rules R; then per rule RULE_ARGS values: window (ms), limit, parameter, and the
 *         name of the rule's state field (Algorithm.field: built once in JavaScript, never in Lua)
 * ARGV[7 + RULE_ARGS * R ...] per identifier: a mask of R chars, '1' where the rule applies to it
 * Reply (flat integers and strings, the same in RESP2 and RESP3):
 *   { now, allowed (0|1), consumed (0|1), then per identifier: blockMs, blockReason,
 *     then per applicable rule, in rule order: available, resetMs, retryMs,
 *     then, only for an algorithm with `undo` and only when consumed: per identifier its receipt (string) }
 *
 * Written for Redis's CPU, which every app server shares: no string is formatted and no table is made
 * per (identifier x rule) pair, the block keys are read with one MGET, and the per-pair results go
 * straight into one flat array. A check of 3 rules x 2 identifiers is TIME, MGET, and per identifier
 * one read and one write (plus a PEXPIRE only when the key must live longer than it already does).
 *
 * This generic frame runs sliding-log, rule sets above MAX_COMPILED_RULES, and Cluster calls that span
 * slots (with receipts). Otherwise a limiter runs the same frame compiled for its rules (compile.ts):
 * same KEYS, ARGV, reply and stored state, about half the Redis CPU.
 */
export const RULE_ARGS = 4;

/** The call's own values: op, cost, penalty, the time (Redis TIME unless ARGV[4] gives a test clock), pad. */
export const LUA_PROLOGUE_TIME = `
local OP = ARGV[1]
local COST = tonumber(ARGV[2])
local PENALTY = ARGV[3] == '1'
local NOW
if ARGV[4] == '' then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  NOW = tonumber(ARGV[4])
end
local PAD = tonumber(ARGV[5])
`;

export const LUA_PROLOGUE = `${LUA_PROLOGUE_TIME}
local NR = tonumber(ARGV[6])
local W, L, P, F = {}, {}, {}, {}
for j = 1, NR do
  local a = 3 + ${RULE_ARGS} * j
  W[j] = tonumber(ARGV[a])
  L[j] = tonumber(ARGV[a + 1])
  P[j] = tonumber(ARGV[a + 2])
  F[j] = ARGV[a + 3]
end
`;

/**
 * The identifiers' blocks, read with one MGET, into out[4 ..] (per identifier blockMs, blockReason); sets
 * NIDS, `out`, `ok`, `blocked`, and E0, after which the pair results follow (from E0 + 1).
 */
export const LUA_BLOCKS = `
local NIDS = #KEYS / 2
local out = { NOW, 0, 0 }
local ok, blocked = true, false
local bkeys = {}
for i = 1, NIDS do bkeys[i] = KEYS[2 * i] end
local bvals = redis.call('MGET', unpack(bkeys))
for i = 1, NIDS do
  local bms, reason = 0, ''
  local b = bvals[i]
  if b then
    local sep = string.find(b, '|', 1, true) or (#b + 1)
    local untilMs = tonumber(string.sub(b, 1, sep - 1))
    if untilMs and untilMs > NOW then
      bms = untilMs - NOW
      reason = string.sub(b, sep + 1)
      blocked = true
    end
  end
  out[2 * i + 2], out[2 * i + 3] = bms, reason
end
local E0 = 3 + 2 * NIDS
`;

/**
 * All or nothing: a check consumes when nothing blocks and every pair admits the cost (or, with penalty,
 * whatever they say); then the pairs are evaluated again, at cost 0 when admitted (`after`), from E0.
 */
export const LUA_CONSUME = `if OP == 'c' and COST > 0 and not blocked and (ok or PENALTY) then
  out[3] = 1
  local after = ok and 0 or COST
  e = E0`;

export const LUA_MAIN = `${LUA_BLOCKS}
local MASKS = 6 + ${RULE_ARGS} * NR
local sts, rules = {}, {}
local e = E0
for i = 1, NIDS do
  local st = fg_load(KEYS[2 * i - 1])
  local mask, js = ARGV[MASKS + i], {}
  for j = 1, NR do
    if string.byte(mask, j) == 49 then
      js[#js + 1] = j
      local avail, reset, retry = fg_eval(st, j, COST)
      if retry > 0 then ok = false end
      out[e + 1], out[e + 2], out[e + 3] = avail, reset, retry
      e = e + 3
    end
  end
  sts[i], rules[i] = st, js
end
${LUA_CONSUME}
  for i = 1, NIDS do
    local st, js = sts[i], rules[i]
    for k = 1, #js do fg_commit(st, js[k], COST) end
    fg_save(KEYS[2 * i - 1], st, js)
    for k = 1, #js do
      local avail, reset, retry = fg_eval(st, js[k], after)
      out[e + 1], out[e + 2], out[e + 3] = avail, reset, retry
      e = e + 3
    end
  end
end
if ok and not blocked then out[2] = 1 end
`;

/** Appended for algorithms with undo receipts (see AlgorithmUndo in types.ts). */
const LUA_RECEIPTS = `
if out[3] == 1 then
  for i = 1, NIDS do out[#out + 1] = fg_receipt(sts[i], rules[i], COST) end
end
`;

/** The full script of one algorithm: prologue, the algorithm's functions, the main body. */
export function buildScript(algorithmLua: string, receiptLua?: string): string {
  if (receiptLua === undefined) return `${LUA_PROLOGUE}\n${algorithmLua}\n${LUA_MAIN}\nreturn out\n`;
  return `${LUA_PROLOGUE}\n${algorithmLua}\n${receiptLua}\n${LUA_MAIN}\n${LUA_RECEIPTS}\nreturn out\n`;
}

export type Reply = Array<number | string>;

/** The 0-based ARGV index of the first identifier's mask, for a call with `nr` rules. */
export const masksAt = (nr: number): number => 6 + RULE_ARGS * nr;

/** ARGV[6 ...]: the rule count, then RULE_ARGS values per rule (see the protocol above). */
export function ruleArgs(rules: readonly Rule[], algorithm: Algorithm): (string | number)[] {
  const out: (string | number)[] = [rules.length];
  for (const r of rules) out.push(r.windowMs, r.limit, algorithm.param(r), algorithm.field(r));
  return out;
}

/** What the JavaScript frame needs from a store: read a key, write it with a TTL. */
export interface FrameStorage {
  get(key: string, now: number): unknown;
  set(key: string, value: unknown, ttlMs: number, now: number): void;
}

/** The JavaScript twin of LUA_PROLOGUE + LUA_MAIN, over the same KEYS and ARGV. */
export function runFrame(
  twin: Twin<unknown, unknown>,
  storage: FrameStorage,
  keys: readonly string[],
  argv: readonly (string | number)[],
  clockNow: number,
): Reply {
  const op = String(argv[0]);
  const cost = Number(argv[1]);
  const penalty = String(argv[2]) === '1';
  const now = argv[3] === '' ? clockNow : Number(argv[3]);
  const nr = Number(argv[5]);
  const W: number[] = [];
  const L: number[] = [];
  const P: number[] = [];
  const F: string[] = [];
  for (let j = 0; j < nr; j++) {
    const a = 6 + RULE_ARGS * j;
    W.push(Number(argv[a]));
    L.push(Number(argv[a + 1]));
    P.push(Number(argv[a + 2]));
    F.push(String(argv[a + 3]));
  }
  const ctx: FrameContext = { now, pad: Number(argv[4]), W, L, P, F };
  const nIds = keys.length / 2;
  const out: Reply = [now, 0, 0];
  const sts: unknown[] = [];
  const rules: number[][] = [];
  const evals: PairEval[][] = [];
  let ok = true;
  let blocked = false;
  for (let i = 0; i < nIds; i++) {
    let bms = 0;
    let reason = '';
    const b = storage.get(keys[2 * i + 1]!, now);
    if (typeof b === 'string') {
      const bar = b.indexOf('|');
      const sep = bar === -1 ? b.length : bar;
      const untilMs = Number(b.slice(0, sep));
      if (untilMs > now) {
        bms = untilMs - now;
        reason = b.slice(sep + 1);
        blocked = true;
      }
    }
    const st = twin.load(storage.get(keys[2 * i]!, now), ctx);
    const mask = String(argv[masksAt(nr) + i]);
    const js: number[] = [];
    const e: PairEval[] = [];
    for (let j = 0; j < nr; j++) {
      if (mask.charCodeAt(j) !== 49) continue;
      js.push(j);
      const ev = twin.evaluate(st, j, cost, ctx);
      if (ev[2] > 0) ok = false;
      e.push(ev);
    }
    sts.push(st);
    rules.push(js);
    evals.push(e);
    out.push(bms, reason);
  }
  if (op === 'c' && cost > 0 && !blocked && (ok || penalty)) {
    out[2] = 1;
    for (let i = 0; i < nIds; i++) {
      const st = sts[i];
      const js = rules[i]!;
      for (const j of js) twin.commit(st, j, cost, ctx);
      const saved = twin.save(st, js, ctx);
      if (saved) storage.set(keys[2 * i]!, saved.value, saved.ttlMs, now);
      evals[i] = js.map((j) => twin.evaluate(st, j, ok ? 0 : cost, ctx));
    }
  }
  if (ok && !blocked) out[1] = 1;
  for (const e of evals) for (const ev of e) out.push(ev[0], ev[1], ev[2]);
  return out;
}
