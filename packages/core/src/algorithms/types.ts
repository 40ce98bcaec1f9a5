import type { Compiler } from './compile';
export type AlgorithmName = 'fixed-window' | 'sliding-window' | 'sliding-log' | 'token-bucket';

/**
 * What an algorithm's functions see of a call, in both twins: the Lua script's prologue sets the same
 * values as upvalues (NOW, PAD, W, L, P). Rule indices `j` are 0-based here and 1-based in Lua.
 */
export interface FrameContext {
  /** Milliseconds since the epoch: Redis TIME in production, the caller's clock in test mode. */
  readonly now: number;
  /** Extra TTL (ms) in test mode, where the logical clock may run ahead of Redis's real expiry. */
  readonly pad: number;
  /** Per rule: window in ms. */
  readonly W: readonly number[];
  /** Per rule: limit. */
  readonly L: readonly number[];
  /** Per rule: the algorithm's parameter (token-bucket: burst; sliding-window: precision; else 0). */
  readonly P: readonly number[];
  /** Per rule: the name of its state field (Algorithm.field). */
  readonly F: readonly string[];
}

/** [available units now, ms until fully replenished, ms until `cost` fits (0 when it fits now)] */
export type PairEval = [available: number, resetMs: number, retryMs: number];

/** What the memory store keeps under a key, and for how long. */
export interface SavedValue<V> {
  value: V;
  ttlMs: number;
}

/**
 * The in-memory twin of an algorithm's Lua functions: the same four steps, the same arithmetic, so the
 * memory store and Redis make the same decision for the same (time, identifiers, cost).
 *
 * Contract shared with Lua: evaluate(st, j, 0) always returns retryMs 0; commit is applied to every
 * applicable rule and must count a window shared by two rules once; save returns undefined when
 * nothing changed.
 */
export interface Twin<S, V = unknown> {
  load(stored: V | undefined, ctx: FrameContext): S;
  evaluate(st: S, j: number, cost: number, ctx: FrameContext): PairEval;
  commit(st: S, j: number, cost: number, ctx: FrameContext): void;
  save(st: S, rules: readonly number[], ctx: FrameContext): SavedValue<V> | undefined;
}

export interface Algorithm<S = any, V = any> {
  readonly name: AlgorithmName;
  /** Tag in state keys: algorithm + layout version (bump it when the stored layout changes). */
  readonly tag: string;
  /**
   * Lua defining `local function`s fg_load(key), fg_eval(st, j, cost) -> avail, reset, retry,
   * fg_commit(st, j, cost) and fg_save(key, st, js). It runs between the frame's prologue and main body.
   */
  readonly lua: string;
  /** The same functions as Lua snippets over constants, for scripts compiled per rule set (compile.ts). */
  readonly compiler?: Compiler;
  readonly twin: Twin<S, V>;
  /** Undo receipts, for checks split across Cluster slots (DESIGN.md invariant 2). See AlgorithmUndo. */
  readonly undo: AlgorithmUndo<S, V>;
  /** The per-rule parameter passed as P[j]. */
  param(rule: { limit: number; burst: number; precision: number; windowMs: number }): number;
  /**
   * The name of the rule's state field, passed as F[j] so that no Lua formats it per call. Fields are
   * keyed by window (and whatever else changes their meaning), never by rule position: two rules with
   * the same field share one state. '' for an algorithm without fields.
   */
  field(rule: { limit: number; burst: number; precision: number; windowMs: number }): string;
  /** Checks a rule against the algorithm's own limits at construction; throws ConfigError naming `at`.field. */
  validate?(rule: { limit: number; burst: number; precision: number; windowMs: number }, at: string): void;
}

/**
 * Undo receipts: what a check consumed, so that when another Cluster slot denies, exactly that can be given
 * back, and only while it still applies. Every algorithm has them: without them a check split across
 * slots could not be all or nothing, and a Cluster would need `cluster: { colocate: true }`.
 *
 * `receipt` is Lua defining `local function fg_receipt(st, js, cost) -> string`, run in the check script
 * (prologue upvalues NOW, W, L, P in scope) after fg_commit for an identifier whose rules `js` consumed:
 * it names what was consumed in which window or bucket (fixed-window: 'w:idx' per distinct window).
 * Numbers in a receipt are written with %d, so the JS twin's text is identical and nothing is a float.
 * `undo` is Lua defining `local function fg_undo(key, receipt, cost)`, run in the undo script, where no
 * prologue exists: it must give back `cost` for each item of the receipt whose window or bucket is still
 * the current one in the stored state, and do nothing otherwise (never over-admit). The undo script makes
 * it idempotent (a marker key per undo id), so fg_undo itself need not be.
 */
export interface AlgorithmUndo<S = unknown, V = unknown> {
  readonly receipt: string;
  readonly undo: string;
  /** The JavaScript twins: the same receipt text, and the same give-back on a stored value (in place). */
  readonly twin: {
    receipt(st: S, js: readonly number[], ctx: FrameContext): string;
    undo(stored: V | undefined, receipt: string, cost: number): void;
  };
}
