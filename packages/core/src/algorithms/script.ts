import type { Rule } from '../rules';
import { lockoutLua, type LockoutSpec } from './lockout';
import { formatWindow } from '../rules';
import { LUA_SNAPSHOT, RULE_ARGS } from './frame';
import { boundReceiptLua } from './incarnation';
import type { Algorithm } from './types';

/*
 * The Lua a limiter runs, generated for its own rules from its algorithm's templates (one Lua source per
 * algorithm: the LuaTemplates in its file). docs/design.md, section 4 ("Script protocol") gives KEYS, ARGV
 * and the reply; section 5 ("Generated scripts") gives this file's plan:
 *
 *   - Every window, limit and parameter is a constant (Redis's Lua is an interpreter: tables of rules read
 *     from ARGV, and a lookup per pair, cost more than the commands the script calls).
 *   - Per mask (which rules apply to an identifier of a kind) a check and a commit function; a rule's
 *     evaluation and a field's commit are written out in them, or, when many masks would repeat them,
 *     are functions the masks call: a script grows with the rules, not with rules x scopes ("Two shapes").
 *   - One frame template, balanced, for both scripts: the single-Redis one and the split one a Cluster runs
 *     in each slot of a check whose identifiers span slots (docs/design.md, section 6).
 *   - The script opens with a comment naming each field, rule and mask, so a Redis error at
 *     `user_script:N` can be read against the script (`createProgram(...).lua`).
 */

/** One distinct state field of a limiter: what rules sharing a window (and parameters) share. */
export interface FieldSpec {
  /** Its prefix in the script: f1, f2, ... */
  readonly id: string;
  /** Its name in the hash (Algorithm.field). */
  readonly name: string;
  /**
   * The values of the first rule with this field: the window and the algorithm's own parameter (precision,
   * burst) are the same for every rule sharing it, and so is the limit where the field name holds it.
   */
  readonly window: number;
  readonly limit: number;
  readonly burst: number;
  readonly precision: number;
}

export interface RuleSpec {
  /** Its function in the script: r1, r2, ... (1-based rule position). */
  readonly id: string;
  readonly window: number;
  readonly limit: number;
  readonly burst: number;
  readonly precision: number;
  readonly field: FieldSpec;
}

/** The rules that apply to identifiers of some kinds, and their fields (in first-rule order). */
export interface MaskSpec {
  /** Its functions' prefix: m1, m2, ... */
  readonly id: string;
  /** '1' where the rule applies (the ARGV mask, call-plan.ts). */
  readonly mask: string;
  readonly rules: readonly RuleSpec[];
  readonly fields: readonly FieldSpec[];
}

/** What a template may need beyond its own field, rule or mask. */
export interface CompileContext {
  readonly rules: readonly RuleSpec[];
  readonly fields: readonly FieldSpec[];
  /**
   * Whether the script answers undo receipts (refundable, split): then a save gives a key without an
   * incarnation the check's own, NONCE (incarnation.ts, adoptLua); otherwise it keeps what it finds.
   */
  readonly incarnations: boolean;
}

/** How a template names a field's values where it is used: `v('c')` is `f1_c` in a mask, `c` in a function. */
export type Names = (name: string) => string;

/**
 * One algorithm's Lua, written once, as snippets over names the generator chooses. Every template returns
 * Lua text over these names in scope: NOW, COST, PAD, OP, `floor` (math.floor), `fmt` (string.format: '%d'
 * prints an integer exactly), the `setup` locals of every field, `key` (the identifier's state key) in
 * load and save, and NONCE (the check's incarnation, or nil) when CompileContext.incarnations. Numbers go in
 * with `lit`, strings with `str`.
 *
 * Every algorithm has the identifier-wide value `inc` (in idVars): `load` sets it to the key's incarnation
 * (nil for none), `save` keeps it in the key and, when the script makes incarnations, gives the key NONCE
 * when it has none (adoptLua); the identifier's receipt is bound to it (incarnation.ts).
 *
 * The generator either writes a rule's evaluation and a field's commit out where they are used (each
 * mask's code), which is fastest, or, when many masks would repeat them, makes each a function the masks
 * call (script.ts, "Two shapes").
 */
export interface LuaTemplates {
  /** One field's values, what its snippets read and write (e.g. ['c'] for a fixed-window count). */
  readonly vars: readonly string[];
  /** Identifier-wide values `load` declares and `save` reads (e.g. ['kept', 'inc']), by these names. */
  readonly idVars: readonly string[];
  /** Per call: `local`s of a field that depend only on NOW (names prefixed by the field's id). */
  setup?(f: FieldSpec, ctx: CompileContext): string;
  /** Statements reading `key`: declare (`local`) the idVars and, per field of the mask, its vars (`v(f)`). */
  load(m: MaskSpec, ctx: CompileContext, v: (f: FieldSpec) => Names): string;
  /** Statements setting avail, reset, retry (declared by the caller): available, resetMs, retryMs at cost `cost`. */
  evaluate(r: RuleSpec, ctx: CompileContext, v: Names, cost: string): string;
  /** Statements adding COST to the field's values, in place. */
  commit(f: FieldSpec, ctx: CompileContext, v: Names): string;
  /** Statements writing the mask's fields (and idVars) to `key`, with its TTL. */
  save(m: MaskSpec, ctx: CompileContext, v: (f: FieldSpec) => Names): string;
  /** A Lua expression: the field's undo-receipt item (AlgorithmUndo) after a commit. */
  receipt(f: FieldSpec, ctx: CompileContext, v: Names): string;
}

/** A number as a Lua literal (an integer below 2^53: exact in Lua's doubles). */
export const lit = (n: number): string => {
  if (!Number.isSafeInteger(n)) throw new Error(`generated scripts take safe integers; got ${n}`);
  return String(n);
};

/** A string as a Lua literal. */
export const str = (s: string): string => JSON.stringify(s);

/** Indents every non-empty line of `text` by `n` spaces. */
export function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}

/** Which rules apply to an identifier of `kind`: the unscoped ones and those `for` it, as '1'/'0'. */
export function ruleMask(rules: readonly Rule[], kind: string): string {
  let mask = '';
  for (const rule of rules) mask += rule.for === undefined || rule.for === kind ? '1' : '0';
  return mask;
}

/** Every mask a limiter with `rules` can send: one for any kind no rule names, one per kind a rule names. */
export function ruleMasks(rules: readonly Rule[]): string[] {
  const masks = new Set<string>();
  // A kind no rule names: only the unscoped rules apply ('' is never a rule's kind: rules.ts checks it).
  masks.add(ruleMask(rules, ''));
  for (const rule of rules) if (rule.for !== undefined) masks.add(ruleMask(rules, rule.for));
  return [...masks];
}

/** The fields, rules and masks of a rule set, as the templates see them. */
function plan(algorithm: Algorithm, rules: readonly Rule[], kind: ScriptKind): { ctx: CompileContext; masks: MaskSpec[] } {
  const byName = new Map<string, FieldSpec>();
  const specs: RuleSpec[] = rules.map((rule, j) => {
    const name = algorithm.field(rule);
    const values = { window: rule.windowMs, limit: rule.limit, burst: rule.burst, precision: rule.precision };
    let field = byName.get(name);
    if (field === undefined) {
      field = { id: `f${byName.size + 1}`, name, ...values };
      byName.set(name, field);
    }
    return { id: `r${j + 1}`, ...values, field };
  });
  const masks = ruleMasks(rules).map((mask, k) => {
    const mine = specs.filter((_, j) => mask[j] === '1');
    return { id: `m${k + 1}`, mask, rules: mine, fields: [...new Set(mine.map((r) => r.field))] };
  });
  return { ctx: { rules: specs, fields: [...byName.values()], incarnations: kind !== 'single' }, masks };
}

/** The comment a generated script opens with: which field is which rule, which mask which identifiers. */
function header(
  algorithm: Algorithm,
  rules: readonly Rule[],
  ctx: CompileContext,
  masks: readonly MaskSpec[],
  kind: ScriptKind,
  shared: boolean,
): string {
  const split = kind === 'split';
  const refundable = kind === 'refundable';
  const anyKind = ruleMask(rules, '');
  const kinds = (mask: string): string => {
    const named = [...new Set(rules.filter((r, j) => r.for !== undefined && mask[j] === '1').map((r) => `'${r.for}'`))];
    return mask === anyKind ? 'identifiers of any kind no rule names' : `identifiers of kind ${named.join(', ')}`;
  };
  const lines = [
    `Floodgate ${algorithm.name} (state layout ${algorithm.tag}), ${split ? 'the split script a Cluster runs per slot' : refundable ? 'the refundable script' : 'the script'} for ${rules.length} rule(s),`,
    `generated by packages/core/src/algorithms/script.ts (${shared ? 'shared shape: a function per rule and field' : 'inline shape'}). KEYS, ARGV, reply: docs/design.md, section 4.`,
    'Rules:',
    ...rules.map(
      (r, j) => `  r${j + 1}: ${r.limit} per ${formatWindow(r.windowMs)}${r.for ? ` for '${r.for}'` : ''}, field ${ctx.rules[j]!.field.id}`,
    ),
    'Fields (fN_*: the state that rules with the same window and parameters share):',
    ...ctx.fields.map(
      (f) =>
        `  ${f.id} = ${str(f.name)} (rules ${ctx.rules
          .filter((r) => r.field === f)
          .map((r) => r.id)
          .join(', ')})`,
    ),
    'Masks (mN_check, mN_commit: which rules apply to an identifier, sent per identifier in ARGV):',
    ...masks.map((m) => `  ${m.id} '${m.mask}': ${m.rules.map((r) => r.id).join(', ') || 'no rule'}, ${kinds(m.mask)}`),
  ];
  return lines.map((l) => `-- ${l}`).join('\n');
}

/*
 * Two shapes. Inline: each mask's code has its rules' evaluations and its fields' commits written out,
 * with local functions, as fast as Lua allows (a function call costs about as much as a short
 * evaluation). Shared: each rule's evaluation, each field's commit and receipt is one function, and
 * masks call them; every generated function is a field of the table F (a Lua function has room for 200
 * locals, and 32 rules' functions would not fit). A rule set takes the shared shape when its masks would
 * repeat more than INLINE_MAX rule evaluations: the script then grows with the rules, not rules x scopes.
 */
const INLINE_MAX = 12;

/** The call's values (ARGV 1-5): op, cost, penalty, the time (Redis TIME unless a test clock), pad. */
const PROLOGUE = `local OP = ARGV[1]
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
local floor, fmt = math.floor, string.format`;

/** The reply under construction (the mask functions write into it). */
const REPLY = `local out = { NOW, 0, 0 }
local ok, blocked = true, false
local e`;

/** Every identifier's block, read with one MGET, into out[4 ..] (blockMs, blockReason per identifier). */
const BLOCKS = `local NIDS = #KEYS / KEYS_PER_ID
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
local E0 = 3 + 2 * NIDS`;

/** How the generated code names things, per shape. */
interface Shape {
  shared: boolean;
  /** A generated function's definition and its calls (local function, or a field of F). */
  define(name: string, params: readonly string[], body: string): string;
  call(name: string, args: readonly string[]): string;
}

function shapeOf(masks: readonly MaskSpec[]): Shape {
  const shared = masks.reduce((n, m) => n + m.rules.length, 0) > INLINE_MAX;
  return {
    shared,
    define: (name, params, body) =>
      `${shared ? `function F.${name}` : `local function ${name}`}(${params.join(', ')})\n${indent(body.trim(), 2)}\nend`,
    call: (name, args) => `${shared ? 'F.' : ''}${name}(${args.join(', ')})`,
  };
}

/** A field's values as a mask names them (f1_c, ...). */
const inMask = (t: LuaTemplates, f: FieldSpec): string[] => t.vars.map((v) => `${f.id}_${v}`);
const maskNames =
  (f: FieldSpec): Names =>
  (v) =>
    `${f.id}_${v}`;
const bare: Names = (v) => v;

/** The names of a mask's values: identifier-wide, then each field's. */
function maskVars(t: LuaTemplates, m: MaskSpec): string[] {
  return [...t.idVars, ...m.fields.flatMap((f) => inMask(t, f))];
}

/** Rule r's evaluation at `cost`, into avail, reset, retry: written out, or a call of its function. */
function evaluation(t: LuaTemplates, ctx: CompileContext, shape: Shape, r: RuleSpec, cost: string): string {
  if (shape.shared) return `avail, reset, retry = ${shape.call(`${r.id}_eval`, [...inMask(t, r.field), cost])}`;
  return `do -- rule ${r.id}\n${indent(t.evaluate(r, ctx, maskNames(r.field), cost).trim(), 2)}\nend`;
}

function commitOf(t: LuaTemplates, ctx: CompileContext, shape: Shape, f: FieldSpec): string {
  if (shape.shared) return `${inMask(t, f).join(', ')} = ${shape.call(`${f.id}_commit`, inMask(t, f))}`;
  return `do -- field ${f.id}\n${indent(t.commit(f, ctx, maskNames(f)).trim(), 2)}\nend`;
}

function receiptOf(t: LuaTemplates, ctx: CompileContext, shape: Shape, f: FieldSpec): string {
  return shape.shared ? shape.call(`${f.id}_receipt`, inMask(t, f)) : t.receipt(f, ctx, maskNames(f));
}

/** The shared shape's functions: per rule its evaluation, per field its commit and receipt. */
function sharedFunctions(t: LuaTemplates, ctx: CompileContext, shape: Shape, receipts: boolean): string[] {
  const vars = [...t.vars];
  return [
    ...ctx.rules.map(
      (r) =>
        `-- rule ${r.id}: ${r.limit} per ${formatWindow(r.window)} (field ${r.field.id})\n${shape.define(`${r.id}_eval`, [...vars, 'cost'], `local avail, reset, retry\n${t.evaluate(r, ctx, bare, 'cost').trim()}\nreturn avail, reset, retry`)}`,
    ),
    ...ctx.fields.map((f) =>
      [
        `-- field ${f.id} = ${str(f.name)}`,
        shape.define(`${f.id}_commit`, vars, `${t.commit(f, ctx, bare).trim()}\nreturn ${vars.join(', ')}`),
        ...(receipts ? [shape.define(`${f.id}_receipt`, vars, `return ${t.receipt(f, ctx, bare)}`)] : []),
      ].join('\n'),
    ),
  ];
}

/** One pair's result into the reply (a retry means the check does not fit). */
const PUT = `out[e + 1], out[e + 2], out[e + 3] = avail, reset, retry
e = e + 3
if retry > 0 then ok = false end`;

/**
 * A mask's code: check (load, then every rule at COST into the reply; gives S[i], what phase 2 needs) and
 * commit (every field committed, the key saved, then the rules evaluated again: into the reply at `after`,
 * or, split, into the lists at0 and atCost, giving the identifier's undo receipt). In the inline shape it is
 * written into the frame's branches; in the shared shape it is two functions, F.<mask>_check and _commit.
 */
interface MaskCode {
  check: string;
  commit: string;
  /** Shared shape: the functions' definitions. */
  functions?: string;
}

function maskCode(t: LuaTemplates, ctx: CompileContext, shape: Shape, m: MaskSpec, kind: ScriptKind): MaskCode {
  const split = kind === 'split';
  const receipt = `receipts[i] = ${boundReceiptLua(m.fields.map((f) => receiptOf(t, ctx, shape, f)).join(" .. ',' .. "))}`;
  const vars = maskVars(t, m);
  const evals = (cost: string, into: string): string[] => m.rules.map((r) => `${evaluation(t, ctx, shape, r, cost)}\n${into}`);
  const keep = (list: string): string => `${list}[#${list} + 1], ${list}[#${list} + 2], ${list}[#${list} + 3] = avail, reset, retry`;
  const check = [t.load(m, ctx, maskNames).trim(), ...evals('COST', PUT), `S[i] = { ${vars.join(', ')} }`].join('\n');
  const commit = [
    `local ${vars.join(', ')} = unpack(s, 1, ${vars.length})`,
    ...m.fields.map((f) => commitOf(t, ctx, shape, f)),
    t.save(m, ctx, maskNames).trim(),
    ...(split ? [...evals('0', keep('at0')), ...evals('COST', keep('atCost')), receipt] : evals('after', PUT)),
    ...(kind === 'refundable' ? [receipt] : []),
  ].join('\n');
  if (!shape.shared) return { check, commit };
  // As functions: S, i, receipts, at0, atCost and after become parameters.
  const params = split ? ['key', 's', 'at0', 'atCost'] : ['key', 's', 'after'];
  return {
    check: `S[i] = ${shape.call(`${m.id}_check`, ['key'])}`,
    commit: kind === 'single' ? shape.call(`${m.id}_commit`, params) : `receipts[i] = ${shape.call(`${m.id}_commit`, params)}`,
    functions: [
      `-- mask ${m.id} '${m.mask}': rules ${m.rules.map((r) => r.id).join(', ')}`,
      shape.define(`${m.id}_check`, ['key'], `local avail, reset, retry\n${check.replace(/^S\[i\] = /m, 'return ')}`),
      shape.define(`${m.id}_commit`, params, `local avail, reset, retry\n${commit.replace(/^receipts\[i\] = /m, 'return ')}`),
    ].join('\n'),
  };
}

/** The frame's dispatch over masks: `body(m)` per mask, a Redis error for a mask this script was not made for. */
function dispatch(masks: readonly MaskSpec[], body: (m: MaskSpec) => string): string {
  const branches = masks.map((m, k) => `${k === 0 ? 'if' : 'elseif'} mask == '${m.mask}' then\n${indent(body(m), 2)}`);
  return `${branches.join('\n')}\nelse\n  return redis.error_reply('ERR floodgate: no plan for rule mask ' .. tostring(mask))\nend`;
}

/** Phase 1: per identifier, its rules at COST into the reply (S[i]: what phase 2 needs; false: no rule applies). */
function checkPhase(masks: readonly MaskSpec[], code: ReadonlyMap<MaskSpec, MaskCode>, lockout: boolean): string {
  const check = indent(
    dispatch(masks, (m) => (m.rules.length === 0 ? 'S[i] = false' : code.get(m)!.check)),
    lockout ? 4 : 2,
  );
  // With a lockout, which identifiers' own rules denied (den[i]): each such denial counts toward its lockout.
  if (lockout) {
    return `e = E0
local S, den = {}, {}
local avail, reset, retry
for i = 1, NIDS do
  local key, mask = KEYS[2 * i - 1], ARGV[MASKS + i]
  local was = ok
  ok = true
  do
${check}
  end
  if not ok then den[i] = true end
  ok = was and ok
end`;
  }
  return `e = E0
local S = {}
local avail, reset, retry
for i = 1, NIDS do
  local key, mask = KEYS[2 * i - 1], ARGV[MASKS + i]
${check}
end`;
}

/** Phase 2 over the identifiers a rule applies to: each mask's commit, with key, mask and s (S[i]) in scope. */
function commitPhase(masks: readonly MaskSpec[], code: ReadonlyMap<MaskSpec, MaskCode>): string {
  return `for i = 1, NIDS do
  local key, mask, s = KEYS[2 * i - 1], ARGV[MASKS + i], S[i]
  if s then
${indent(
  dispatch(
    masks.filter((m) => m.rules.length > 0),
    (m) => code.get(m)!.commit,
  ),
  4,
)}
  end
end`;
}

/**
 * The single-Redis frame: all or nothing, then every pair evaluated again at `after` (0 when admitted). The
 * refundable kind also answers, when the check consumed, each identifier's undo receipt (limiter.refund()).
 */
function singleFrame(
  masks: readonly MaskSpec[],
  code: ReadonlyMap<MaskSpec, MaskCode>,
  refundable: boolean,
  lockout?: LockoutSpec,
): string {
  return `${checkPhase(masks, code, lockout !== undefined)}
if OP == 'c' and COST > 0 and not blocked and (ok or PENALTY) then
  out[3] = 1
  local after = ok and 0 or COST
  e = E0${refundable ? '\n  local receipts = {}' : ''}
${indent(commitPhase(masks, code), 2)}${refundable ? "\n  for i = 1, NIDS do out[e + i] = receipts[i] or '' end" : ''}
end${lockout ? `\n${lockoutLua(lockout)}` : ''}
if ok and not blocked then out[2] = 1 end
return out`;
}

/*
 * The split frame (a Cluster slot of a check whose identifiers span slots, docs/design.md section 6):
 * the same evaluation and writes, but no slot knows what the others answer, so the reply carries every
 * outcome the whole check can have (frame.ts): the pairs before any commit; when this slot consumed, the
 * pairs after the commit at 0 and at COST, each identifier's undo receipt and a snapshot of each key as
 * it was before.
 */
function splitFrame(masks: readonly MaskSpec[], code: ReadonlyMap<MaskSpec, MaskCode>, lockout?: LockoutSpec): string {
  return `${checkPhase(masks, code, lockout !== undefined)}
if ok and not blocked then out[2] = 1 end${lockout ? `\n${lockoutLua(lockout)}` : ''}
if OP == 'c' and COST > 0 and not blocked and (ok or PENALTY) then
  out[3] = 1
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local before = {}
  for i = 1, NIDS do
    if S[i] then
      local key = KEYS[2 * i - 1]
      local ty, items = fg_read(key)
      local at = -1
      if ty ~= 'none' then
        local pttl = redis.call('PTTL', key)
        if pttl >= 0 then at = clock + pttl end
      end
      for k = 1, #items do items[k] = fg_enc(items[k]) end
      before[i] = { ty, at, items }
    end
  end
  local at0, atCost, receipts = {}, {}, {}
${indent(commitPhase(masks, code), 2)}
  for k = 1, #at0 do out[e + k] = at0[k] end
  e = e + #at0
  for k = 1, #atCost do out[e + k] = atCost[k] end
  e = e + #atCost
  for i = 1, NIDS do out[e + i] = receipts[i] or '' end
  e = e + NIDS
  for i = 1, NIDS do
    local b = before[i]
    if b == nil then
      out[e + 1], out[e + 2], out[e + 3], out[e + 4] = '', 'none', -1, 0
      e = e + 4
    else
      out[e + 1], out[e + 2], out[e + 3], out[e + 4] = fg_digest(KEYS[2 * i - 1]), b[1], b[2], #b[3]
      e = e + 4
      for k = 1, #b[3] do out[e + k] = b[3][k] end
      e = e + #b[3]
    end
  end
end
return out`;
}

/**
 * Which script for a rule set: 'single' (one Redis), 'refundable' (one Redis, answering each identifier's
 * undo receipt when the check consumed, for limiter.refund()), 'split' (a Cluster slot of a check whose
 * identifiers span slots).
 */
export type ScriptKind = 'single' | 'refundable' | 'split';

/** The script of `kind` for `rules`, with the lockout step when `lockout` is given. */
export function compileScript(algorithm: Algorithm, rules: readonly Rule[], kind: ScriptKind = 'single', lockout?: LockoutSpec): string {
  const split = kind === 'split';
  const t = algorithm.lua;
  const { ctx, masks } = plan(algorithm, rules, kind);
  const shape = shapeOf(masks);
  const code = new Map(masks.filter((m) => m.rules.length > 0).map((m) => [m, maskCode(t, ctx, shape, m, kind)]));
  const sections: string[] = [header(algorithm, rules, ctx, masks, kind, shape.shared), PROLOGUE];
  // The check's incarnation, after its masks (docs/design.md, section 4), for a key that has none.
  if (ctx.incarnations) {
    sections.push(
      `-- the incarnation a key without one gets (incarnation.ts): ARGV after the masks\nlocal NONCE = ARGV[${6 + RULE_ARGS * rules.length} + #KEYS / ${lockout ? 4 : 2} + 1]\nif NONCE and not string.find(NONCE, '^[1-9]%d*$') then NONCE = nil end`,
    );
  }
  if (split) sections.push(`-- key snapshots, for the Cluster give-back (frame.ts)\n${LUA_SNAPSHOT.trim()}`);
  const setup = ctx.fields.map((f) => t.setup?.(f, ctx).trim() ?? '').filter(Boolean);
  if (setup.length > 0) sections.push(`-- per field, what depends only on NOW\n${setup.join('\n')}`);
  sections.push(REPLY);
  if (shape.shared)
    sections.push('local F = {}', ...sharedFunctions(t, ctx, shape, kind !== 'single'), ...[...code.values()].map((c) => c.functions!));
  sections.push(
    `-- the frame: every identifier's block, then its rules at COST, then (all or nothing) the commit\n` +
      `local KEYS_PER_ID = ${lockout ? 4 : 2}\n${BLOCKS}\nlocal MASKS = ${6 + RULE_ARGS * rules.length}`,
  );
  sections.push(split ? splitFrame(masks, code, lockout) : singleFrame(masks, code, kind === 'refundable', lockout));
  return `${sections.join('\n\n')}\n`;
}

/**
 * What a limiter runs: its algorithm (the memory store's twin), the single-Redis script, and the split
 * script a Cluster needs for checks whose identifiers span slots (made on first use).
 */
export interface Program {
  readonly algorithm: Algorithm;
  /** The single-Redis script: 'refundable' when the limiter was made with `refunds: true`, else 'single'. */
  readonly lua: string;
  /** Whether `lua` answers receipts (the reply's last values when it consumed). */
  readonly refundable: boolean;
  /** The split script (made on first use: only a Cluster with checks spanning slots needs it). */
  readonly split: string;
  /**
   * The `lockout` option, decided in both scripts: each identifier then has a third key, its lockout
   * state, after all the identifiers' state and block keys, and a fourth, the block index of its block
   * key's slot, which a lockout's block enters (KEYS: s1 b1 ... sN bN l1 ... lN x1 ... xN).
   */
  readonly lockout: LockoutSpec | undefined;
}

export function createProgram(algorithm: Algorithm, rules: readonly Rule[], refundable = false, lockout?: LockoutSpec): Program {
  let split: string | undefined;
  return {
    algorithm,
    lua: compileScript(algorithm, rules, refundable ? 'refundable' : 'single', lockout),
    refundable,
    lockout,
    get split() {
      split ??= compileScript(algorithm, rules, 'split', lockout);
      return split;
    },
  };
}
