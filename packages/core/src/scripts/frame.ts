import type { Rule } from '../config/rules';
import type { Algorithm, AlgorithmUndo, FrameContext, PairEval, Twin, FrameStorage } from './types';
import type { Reply } from './reply';
import { lockoutTwin, type LockoutSpec } from './lockout';
import { bindReceipt } from './incarnation';
import { costTotal, fieldUnit, parseCostArg } from './units';

/*
 * The frame every check runs in: the script protocol (docs/design.md, section 4), its JavaScript twin (what
 * the memory store runs), and the Lua a split Cluster check shares with the give-back. The Lua of a check
 * is generated per rule set from the algorithms' templates (script.ts).
 *
 * A check reads every identifier's block and state, evaluates every applicable (identifier x rule) pair,
 * and consumes only when every pair admits the cost: all or nothing, in one script call.
 *
 * KEYS: per identifier i (1-based): KEYS[2i-1] its state key, KEYS[2i] its block key.
 * ARGV[1] op: 'c' check (consumes when allowed) | 'p' peek (consumes nothing)
 * ARGV[2] cost (integer >= 0) for every rule; or, when the rules count several units, one per unit in the
 *         order of each unit's first rule, joined by ':' (units.ts)
 * ARGV[3] penalty: '1' makes a denied check consume too, '0' not
 * ARGV[4] now (ms); '' in production, where the script reads Redis TIME (one clock for every app server)
 * ARGV[5] TTL padding in ms (0 in production; test mode pads, as its clock is not Redis's)
 * ARGV[6 ...] per identifier: a mask of R chars (R rules), '1' where the rule applies to it. The rules
 *         themselves are not sent: the generated script has them as constants, and the twin has them from
 *         the program (RuleParams). Each argument costs Redis about 870 instructions to pass (the rules
 *         were 1 + 5 per rule, 6 of a 1 x 1 check's 13: docs/design.md, section 5).
 *         (The settle script, settle.ts, still takes R and the rules' values before its masks.)
 * then the check's incarnation: the number a key without one gets when a script that answers receipts
 *         (refundable, split) commits to it (incarnation.ts); the plain script ignores it
 * then, with a lockout, per identifier '1' when the lockout's scope names its kind, else '0' (lockout.ts)
 * Reply (flat integers and strings, the same in RESP2 and RESP3):
 *   { now, allowed (0|1), consumed (0|1), then per identifier: blockMs, blockReason,
 *     then per identifier, per applicable rule in rule order: available, resetMs, retryMs }
 *   evaluated at the cost before a commit, or, when the check consumed, after it: at 0 when admitted, at
 *   the cost when penalty consumed a denial.
 *
 * The split frame (what a Cluster runs in each slot of a check whose identifiers span slots) answers the
 * same, and, since no slot knows what the others answer, every outcome the whole check can have:
 *   { now, allowed, consumed, per identifier: blockMs, blockReason,
 *     per pair the values at the cost before any commit,
 *     only when consumed:
 *       per pair the same after the commit at cost 0, then per pair after the commit at the cost,
 *       per identifier its undo receipt (AlgorithmUndo),
 *       per identifier a snapshot: digest, type, expireAt, n, then n items
 *         digest: fg_digest of the key as this call left it ('' when no rule applies: nothing written)
 *         type, items (fg_enc): the key before this call; expireAt: its expiry then (ms since the epoch,
 *         Redis's clock, -1 for none) }
 * The Cluster store merges the slots' replies into the reply one Redis would give, and gives back the slots
 * that consumed when the whole check must not (stores/cluster.ts).
 */
export const RULE_ARGS = 5;

/*
 * Snapshots of a state key, for the split frame (which takes one before it writes) and the Cluster undo
 * script (which restores it). Lua, no prologue needed.
 *   fg_read(key) -> type ('hash' | 'list' | 'none'), and its fields and values (HGETALL) or entries
 *   fg_digest(key) -> sha1 hex of the key's DUMP (its type, encoding and contents): equal while nothing
 *     has written the key. A rewrite to the same contents in another encoding or order only differs, and
 *     a digest that differs only makes the give-back run the receipt instead of restoring: never unsafe.
 *   fg_enc(s) / fg_dec(s): an item as reply text that no client decoding can alter: every byte outside
 *     [A-Za-z0-9:.-] as '%' and two hex digits (a sliding-window ring is MessagePack; the other
 *     algorithms' fields and entries are plain text and pass unchanged)
 */
export const LUA_SNAPSHOT = `
local function fg_read(key)
  local ty = redis.call('TYPE', key)['ok']
  if ty == 'hash' then return ty, redis.call('HGETALL', key) end
  if ty == 'list' then return ty, redis.call('LRANGE', key, 0, -1) end
  return ty, {}
end

local function fg_digest(key)
  return redis.sha1hex(redis.call('DUMP', key) or '')
end

-- per byte its escape, made on first use ('%' is escaped too, so the encoding is injective)
local FG_ESC = setmetatable({}, { __index = function(t, c)
  local v = string.format('%%%02x', string.byte(c))
  t[c] = v
  return v
end })
local function fg_enc(s)
  return (string.gsub(s, '[^%w:%.%-]', FG_ESC))
end

local function fg_dec(s)
  return (string.gsub(s, '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end))
end
`;

/** The 0-based ARGV index of a check's first identifier's mask (ARGV[6] in Lua). */
export const MASKS_AT = 5;

/** The rules a program's twin evaluates: per rule (0-based), what a script has as constants. */
export type RuleParams = Pick<FrameContext, 'window' | 'limit' | 'burst' | 'precision' | 'field'>;

/** The RuleParams of `rules` under `algorithm`. */
export function ruleParams(rules: readonly Rule[], algorithm: Algorithm): RuleParams {
  return {
    window: rules.map((r) => r.windowMs),
    limit: rules.map((r) => r.limit),
    burst: rules.map((r) => r.burst),
    precision: rules.map((r) => r.precision),
    field: rules.map((r) => algorithm.field(r)),
  };
}

/** The settle script's ARGV[5 ...] (settle.ts): the rule count, then RULE_ARGS values per rule. */
export function ruleArgs(rules: readonly Rule[], algorithm: Algorithm): (string | number)[] {
  const out: (string | number)[] = [rules.length];
  for (const r of rules) out.push(r.windowMs, r.limit, r.burst, r.precision, algorithm.field(r));
  return out;
}

/** A well-formed incarnation (incarnation.ts) as the scripts accept it, or undefined. */
const incarnationArg = (v: unknown): string | undefined => (typeof v === 'string' && /^[1-9]\d*$/.test(v) ? v : undefined);

/** What both JavaScript frames share: the call's values, the blocks, and every pair evaluated at COST. */
interface Evaluated {
  ctx: FrameContext;
  /** { now, 0, 0, then per identifier blockMs, blockReason } */
  out: Reply;
  /** What the check's costs add up to: more than 0 exactly when it commits anything. */
  cost: number;
  /** Per rule (0-based): the cost of its unit. */
  costs: number[];
  ok: boolean;
  blocked: boolean;
  /** Whether the call consumes: a check of cost > 0, nothing blocked, every pair admits it (or penalty). */
  consumes: boolean;
  sts: unknown[];
  rules: number[][];
  evals: PairEval[][];
  /** Per identifier: whether its own rules denied (what a lockout counts). */
  denied: boolean[];
}

function evaluateFrame(
  twin: Twin<unknown, unknown>,
  params: RuleParams,
  storage: FrameStorage,
  keys: readonly string[],
  argv: readonly (string | number)[],
  clockNow: number,
  keysPerId: number,
  incarnations: boolean,
): Evaluated {
  const op = String(argv[0]);
  const penalty = String(argv[2]) === '1';
  const now = argv[3] === '' ? clockNow : Number(argv[3]);
  const nr = params.window.length;
  const nIds = keys.length / keysPerId;
  const incarnation = incarnations ? incarnationArg(argv[MASKS_AT + nIds]) : undefined;
  const ctx: FrameContext = { ...params, now, pad: Number(argv[4]), incarnation };
  const costs = ruleCosts(ctx, argv[1]!);
  const cost = costTotal(argv[1]!);
  const out: Reply = [now, 0, 0];
  const denied: boolean[] = [];
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
    const mask = String(argv[MASKS_AT + i]);
    const js: number[] = [];
    const e: PairEval[] = [];
    for (let j = 0; j < nr; j++) {
      if (mask.charCodeAt(j) !== 49) continue;
      js.push(j);
      const ev = twin.evaluate(st, j, costs[j]!, ctx);
      if (ev[2] > 0) ok = false;
      e.push(ev);
    }
    denied.push(e.some((ev) => ev[2] > 0));
    sts.push(st);
    rules.push(js);
    evals.push(e);
    out.push(bms, reason);
  }
  const consumes = op === 'c' && cost > 0 && !blocked && (ok || penalty);
  return { ctx, out, cost, costs, ok, blocked, consumes, sts, rules, evals, denied };
}

/** The rule arguments (RULE_ARGS per rule, from the 0-based ARGV index `at + 1`) into a frame's context. */
export function readRuleArgs(ctx: FrameContext, argv: readonly (string | number)[], at: number, nr: number): void {
  for (let j = 0; j < nr; j++) {
    const a = at + 1 + RULE_ARGS * j;
    (ctx.window as number[]).push(Number(argv[a]));
    (ctx.limit as number[]).push(Number(argv[a + 1]));
    (ctx.burst as number[]).push(Number(argv[a + 2]));
    (ctx.precision as number[]).push(Number(argv[a + 3]));
    (ctx.field as string[]).push(String(argv[a + 4]));
  }
}

/**
 * Per rule, the cost of its unit, from a cost argument (units.ts): one number for every rule, or one per unit
 * in the order of each unit's first rule (the unit is the field's, after '@'). A list of another length
 * than the rules' units is an error, as in the Lua.
 */
export function ruleCosts(ctx: FrameContext, arg: string | number): number[] {
  const given = parseCostArg(arg);
  const units: string[] = [];
  for (const f of ctx.field) if (!units.includes(fieldUnit(f))) units.push(fieldUnit(f));
  if (units.length <= 1) return ctx.field.map(() => given[0]!);
  if (given.length !== units.length) throw new Error(`ERR floodgate: ${units.length} unit costs expected (${units.join(', ')})`);
  return ctx.field.map((f) => given[units.indexOf(fieldUnit(f))]!);
}

/** Commits and saves identifier i's rules (the script's mask commit, one identifier); the value saved. */
function commitOne(twin: Twin<unknown, unknown>, storage: FrameStorage, keys: readonly string[], f: Evaluated, i: number): unknown {
  const st = f.sts[i];
  const js = f.rules[i]!;
  for (const j of js) twin.commit(st, j, f.costs[j]!, f.ctx);
  const saved = twin.save(st, js, f.ctx);
  if (saved) storage.save(keys[2 * i]!, saved.value, saved.ttlMs, f.ctx.now);
  return saved?.value;
}

/** Identifier i's receipt, as the script answers it: the items bound to the incarnation of the value saved. */
function receiptOf(undo: AlgorithmUndo<unknown, unknown>['twin'], f: Evaluated, i: number, saved: unknown): string {
  const items = undo.receipt(f.sts[i], f.rules[i]!, f.ctx);
  return items === '' ? '' : bindReceipt(undo.incarnation(saved), items);
}

/** What a program adds to the plain frame (script.ts, Program). */
export interface FrameExtras {
  /** A refundable program: each identifier's undo receipt when the check consumed. */
  receipts?: AlgorithmUndo<unknown, unknown>['twin'];
  /** The lockout step (KEYS then hold each identifier's lockout key after its state and block keys). */
  lockout?: LockoutSpec;
}

/**
 * The lockout step, as both scripts run it: after the checks (and a commit), for a consuming check denied by
 * rules, counted for the identifiers the scope names (ARGV after the masks and the incarnation: '1' per
 * identifier in scope).
 */
function lockoutStep(
  f: Evaluated,
  storage: FrameStorage,
  keys: readonly string[],
  argv: readonly (string | number)[],
  lockout: LockoutSpec | undefined,
): void {
  if (lockout === undefined || String(argv[0]) !== 'c' || f.cost <= 0 || f.ok || f.blocked) return;
  const scoped = MASKS_AT + f.denied.length + 1;
  const denied = f.denied.map((d, i) => d && String(argv[scoped + i]) === '1');
  lockoutTwin(lockout, storage, keys, denied, f.out, f.ctx.now, f.ctx.pad);
}

/**
 * The JavaScript twin of a check's script, over the same KEYS and ARGV; with `receipts` (a refundable
 * program), also each identifier's undo receipt when the check consumed, as the refundable script answers.
 */
export function runFrame(
  twin: Twin<unknown, unknown>,
  params: RuleParams,
  storage: FrameStorage,
  keys: readonly string[],
  argv: readonly (string | number)[],
  clockNow: number,
  { receipts, lockout }: FrameExtras = {},
): Reply {
  const f = evaluateFrame(twin, params, storage, keys, argv, clockNow, lockout ? 4 : 2, receipts !== undefined);
  const { out, evals } = f;
  const saved: unknown[] = [];
  if (f.consumes) {
    out[2] = 1;
    for (let i = 0; i < f.sts.length; i++) {
      saved.push(commitOne(twin, storage, keys, f, i));
      evals[i] = f.rules[i]!.map((j) => twin.evaluate(f.sts[i], j, f.ok ? 0 : f.costs[j]!, f.ctx));
    }
  }
  lockoutStep(f, storage, keys, argv, lockout);
  if (f.ok && !f.blocked) out[1] = 1;
  for (const e of evals) for (const ev of e) out.push(ev[0], ev[1], ev[2]);
  if (receipts && f.consumes) for (let i = 0; i < f.sts.length; i++) out.push(receiptOf(receipts, f, i, saved[i]));
  return out;
}

/**
 * The JavaScript twin of the split frame, up to and including the undo receipts: the
 * snapshots that follow them in the Lua reply are of Redis's own bytes, which a memory store has not.
 */
export function runSplitFrame(
  algorithm: Algorithm,
  params: RuleParams,
  storage: FrameStorage,
  keys: readonly string[],
  argv: readonly (string | number)[],
  clockNow: number,
  lockout?: LockoutSpec,
): Reply {
  const twin = algorithm.twin as Twin<unknown, unknown>;
  const f = evaluateFrame(twin, params, storage, keys, argv, clockNow, lockout ? 4 : 2, true);
  const { out } = f;
  if (f.ok && !f.blocked) out[1] = 1;
  lockoutStep(f, storage, keys, argv, lockout);
  for (const e of f.evals) for (const ev of e) out.push(ev[0], ev[1], ev[2]);
  if (!f.consumes) return out;
  out[2] = 1;
  const at0: number[] = [];
  const atCost: number[] = [];
  const saved: unknown[] = [];
  for (let i = 0; i < f.sts.length; i++) {
    saved.push(commitOne(twin, storage, keys, f, i));
    for (const j of f.rules[i]!) {
      at0.push(...twin.evaluate(f.sts[i], j, 0, f.ctx));
      atCost.push(...twin.evaluate(f.sts[i], j, f.costs[j]!, f.ctx));
    }
  }
  out.push(...at0, ...atCost);
  for (let i = 0; i < f.sts.length; i++) out.push(receiptOf(algorithm.undo.twin, f, i, saved[i]));
  return out;
}
