import type { Rule } from '../rules';
import { LUA_BLOCKS, LUA_CONSUME, LUA_PROLOGUE_TIME, RULE_ARGS, buildScript } from './frame';
import type { Algorithm } from './types';

/*
 * Compiled scripts: the frame of frame.ts written out for one limiter's rules, with every window, limit
 * and parameter a constant and every loop over rules unrolled. Same KEYS, ARGV and reply, the same
 * arithmetic step for step, so the JavaScript twin still answers what this script answers (the model
 * test runs them side by side). Why: Redis's Lua is an interpreter, and the generic frame spends most of
 * a check's Redis CPU on its own generality (rule tables built from ARGV, a function call and a table
 * lookup per pair, a field table per identifier, the re-evaluation after a commit): for 3 rules x 2
 * identifiers, the fixed-window check fell from ~43 to ~22 µs of Redis CPU. Redis CPU is what every app
 * server shares, so it is the one cost worth code generation.
 *
 * Which rules apply to an identifier comes in ARGV as a mask per identifier (call-plan.ts); the masks a
 * limiter can send are known from its rules (ruleMasks), so the script has one branch per mask. An
 * unexpected mask is a bug, answered with a Redis error rather than a wrong decision.
 *
 * An algorithm opts in with a Compiler: Lua snippets over named locals instead of functions over tables.
 * State that belongs to a field (what rules sharing a window share) lives in locals prefixed by the
 * field's name in the script (`v`); an identifier's locals survive from the evaluation to the commit in
 * one table per identifier.
 */

/** One rule as the compiled script sees it: constants, and the field (shared state) it reads. */
export interface CompiledRule {
  readonly W: number;
  readonly L: number;
  readonly P: number;
  readonly field: CompiledField;
}

/** One distinct state field of a limiter: its name in the hash, and its locals' prefix in the script. */
export interface CompiledField {
  readonly name: string;
  readonly v: string;
  /** The first rule with this field: W and P (and for token-bucket L) are the same for every rule sharing it. */
  readonly rule: { readonly W: number; readonly L: number; readonly P: number };
}

/**
 * Lua snippets of one algorithm, in the scope of the compiled frame: NOW, COST, PAD, OP, `floor`
 * (math.floor), `fmt` (string.format: '%d' formats an integer faster than Redis converts a Lua number
 * argument), and per identifier `key` (its state key). Numbers are inlined with `lit`.
 */
export interface Compiler {
  /** Per call, once for each field of the limiter: locals that depend only on NOW (prefixed v). */
  setup(f: CompiledField): string;
  /** Reads `key` and declares every local of `fields` (and of the identifier, such as `kept`). */
  load(fields: readonly CompiledField[]): string;
  /** The locals load declares that the commit and save need: carried between the two phases. */
  locals(fields: readonly CompiledField[]): string[];
  /** Sets A, R, Y (available, reset ms, retry ms; declared by the frame) for `r` at cost `cost`, a Lua expression. */
  evaluate(r: CompiledRule, cost: string): string;
  /** Adds COST to a field's state (once per field, whatever the number of rules sharing it). */
  commit(f: CompiledField): string;
  /** Writes the identifier's fields to `key` with their TTL. */
  save(fields: readonly CompiledField[]): string;
}

/** A number as a Lua literal (an integer below 2^53: exact in Lua's doubles). */
export const lit = (n: number): string => {
  if (!Number.isSafeInteger(n)) throw new Error(`compiled scripts take safe integers; got ${n}`);
  return String(n);
};

/** A string as a Lua literal (field names are digits and ':', but quote properly anyway). */
export const str = (s: string): string => JSON.stringify(s);

/** More rules than this run in the generic frame: the compiled body grows with masks x rules. */
export const MAX_COMPILED_RULES = 8;

/** Which rules apply to an identifier of `kind`: the unscoped ones and those `for` it, as '1'/'0'. */
export function ruleMask(rules: readonly Rule[], kind: string): string {
  let mask = '';
  for (const rule of rules) mask += rule.for === undefined || rule.for === kind ? '1' : '0';
  return mask;
}

/** Every mask a limiter with `rules` can send: one per kind named by a rule, and one for any other kind. */
export function ruleMasks(rules: readonly Rule[]): string[] {
  const masks = new Set<string>();
  // A kind no rule names: only the unscoped rules apply ('' is never a rule's kind: rules.ts checks it).
  masks.add(ruleMask(rules, ''));
  for (const rule of rules) if (rule.for !== undefined) masks.add(ruleMask(rules, rule.for));
  return [...masks];
}

/** The frame, compiled for `rules` (see the comment at the top); undefined when the algorithm has no compiler. */
export function compileScript(algorithm: Algorithm, rules: readonly Rule[]): string | undefined {
  const c = algorithm.compiler;
  if (c === undefined || rules.length === 0 || rules.length > MAX_COMPILED_RULES) return undefined;
  const fields = new Map<string, CompiledField>();
  const compiled: CompiledRule[] = rules.map((rule) => {
    const name = algorithm.field(rule);
    const P = algorithm.param(rule);
    let field = fields.get(name);
    if (field === undefined) {
      field = { name, v: `f${fields.size + 1}`, rule: { W: rule.windowMs, L: rule.limit, P } };
      fields.set(name, field);
    }
    return { W: rule.windowMs, L: rule.limit, P, field };
  });
  const setup = [...fields.values()].map((f) => c.setup(f)).join('\n');

  const evalInto = (r: CompiledRule, cost: string): string => `${c.evaluate(r, cost)}
out[e + 1], out[e + 2], out[e + 3] = A, R, Y
e = e + 3`;

  const branches = ruleMasks(rules).map((mask) => {
    const mine = compiled.filter((_, j) => mask[j] === '1');
    const own = [...new Set(mine.map((r) => r.field))];
    if (mine.length === 0) return { mask, check: 'S[i] = false', commit: '' };
    const locals = c.locals(own);
    const check = `${c.load(own)}
${mine.map((r) => `${evalInto(r, 'COST')}\nif Y > 0 then ok = false end`).join('\n')}
S[i] = { ${locals.join(', ')} }`;
    const commit = `local ${locals.join(', ')} = unpack(s, 1, ${locals.length})
${own.map((f) => c.commit(f)).join('\n')}
${c.save(own)}
${mine.map((r) => evalInto(r, 'after')).join('\n')}`;
    return { mask, check, commit };
  });
  const dispatch = (body: (b: (typeof branches)[number]) => string): string =>
    branches.map((b, k) => `${k === 0 ? 'if' : 'elseif'} mask == ${str(b.mask)} then\n${body(b)}`).join('\n')
    + `\nelse\n  return redis.error_reply('ERR floodgate: no compiled plan for rule mask ' .. tostring(mask))\nend`;

  return `-- Floodgate ${algorithm.tag}, compiled for ${rules.length} rule(s) (algorithms/compile.ts)
${LUA_PROLOGUE_TIME}
local floor, fmt = math.floor, string.format
${setup}
${LUA_BLOCKS}
local MASKS = ${6 + RULE_ARGS * rules.length}
local e = E0
local S = {}
local A, R, Y
for i = 1, NIDS do
  local key, mask = KEYS[2 * i - 1], ARGV[MASKS + i]
${dispatch((b) => b.check)}
end
${LUA_CONSUME}
  for i = 1, NIDS do
    local key, mask, s = KEYS[2 * i - 1], ARGV[MASKS + i], S[i]
${dispatch((b) => b.commit)}
  end
end
if ok and not blocked then out[2] = 1 end
return out
`;
}

/**
 * What a limiter runs: its algorithm (the memory store's twin) and the Lua for a single Redis, compiled
 * for its rules when the algorithm can be. (A Cluster call spanning slots runs receiptsScript.)
 */
export interface Program {
  readonly algorithm: Algorithm;
  /** The single-Redis script. */
  readonly lua: string;
  /** Whether `lua` is compiled for the rules (else it is the generic frame). */
  readonly compiled: boolean;
}

export function createProgram(algorithm: Algorithm, rules: readonly Rule[]): Program {
  const compiled = compileScript(algorithm, rules);
  return {
    algorithm,
    lua: compiled ?? buildScript(algorithm.lua),
    compiled: compiled !== undefined,
  };
}

const withReceipts = new WeakMap<Algorithm, string>();
/** The generic frame with undo receipts: what a Cluster runs per slot when a check spans slots. */
export function receiptsScript(algorithm: Algorithm): string {
  let lua = withReceipts.get(algorithm);
  if (lua === undefined) {
    lua = buildScript(algorithm.lua, algorithm.undo.receipt);
    withReceipts.set(algorithm, lua);
  }
  return lua;
}
