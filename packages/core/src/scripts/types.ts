export type AlgorithmName = 'fixed-window' | 'sliding-window' | 'sliding-log' | 'token-bucket';

/**
 * What an algorithm's JavaScript twin sees of a call: the time, and each rule's values (the generated Lua
 * has them as constants). Rule indices `j` are 0-based.
 */
export interface FrameContext {
  /** Milliseconds since the epoch: Redis TIME in production, the caller's clock in test mode. */
  readonly now: number;
  /** Extra TTL (ms) in test mode, where the logical clock may run ahead of Redis's real expiry. */
  readonly pad: number;
  /** Per rule (0-based): its window in ms. */
  readonly window: readonly number[];
  /** Per rule: its limit. */
  readonly limit: readonly number[];
  /** Per rule: its bucket capacity (token-bucket; the limit unless `burst` was given). */
  readonly burst: readonly number[];
  /** Per rule: its buckets per window (sliding-window; 10 unless `precision` was given). */
  readonly precision: readonly number[];
  /** Per rule: the name of its state field (Algorithm.field). */
  readonly field: readonly string[];
  /**
   * The incarnation a save gives a key that has none (incarnation.ts): the check's own, when its program
   * answers receipts (refundable, split); undefined otherwise, and a save then keeps what it finds.
   */
  readonly incarnation: string | undefined;
  /**
   * The settle script's charge (settle.ts): a commit of units past what the rules admit, which a bucket
   * owes up to one window beyond empty (token-bucket); absent for a check.
   */
  readonly charge?: boolean;
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
  /** Its Lua, written once: the templates every script for a rule set is generated from (script.ts). */
  readonly lua: LuaTemplates;
  readonly twin: Twin<S, V>;
  /** Undo receipts, for checks split across Cluster slots (docs/design.md, section 6). See AlgorithmUndo. */
  readonly undo: AlgorithmUndo<S, V>;
  /**
   * The name of the rule's state field (in the hash, and FrameContext.field). Fields are
   * keyed by window (and whatever else changes their meaning), never by rule position: two rules with
   * the same field share one state. '' for an algorithm without fields.
   */
  field(rule: { limit: number; burst: number; precision: number; windowMs: number; unit?: string | undefined }): string;
  /** The rule options besides limit, window and for that this algorithm reads; any other is a ConfigError. */
  readonly ruleOptions: readonly ('burst' | 'precision')[];
  /** The largest cost a rule can ever admit at once (a larger static cost is a ConfigError). */
  capacity(rule: { limit: number; burst: number }): number;
  /** Checks a rule against the algorithm's own limits at construction; throws ConfigError naming `at`.field. */
  validate?(rule: { limit: number; burst: number; precision: number; windowMs: number }, at: string): void;
}

/**
 * Undo receipts: what a check consumed, so that when another Cluster slot denies, exactly that can be given
 * back, and only while it still applies. Every algorithm has them: without them a check split across
 * slots could not be all or nothing, and a Cluster would need `cluster: { colocate: true }`.
 *
 * The receipt itself is written by the check script: each field's `F.<id>_receipt` (LuaTemplates) names
 * what its commit consumed in which window or bucket (fixed-window: 'w:idx'); an identifier's receipt is
 * its fields' items joined by ','. Numbers in a receipt are written with %d, so the JS twin's text is
 * identical and nothing is a float.
 * The frame binds an identifier's receipt to the key's incarnation ('<incarnation>#<items>', incarnation.ts),
 * and the give-back calls fg_undo with the items only while the key still holds that incarnation: a reset or
 * an expiry since makes the receipt a no-op.
 * `undo` is Lua defining `local function fg_undo(key, receipt, cost)`, run in the give-back script, where
 * no prologue exists: it must give back `cost(sfx)` (sfx: the item's field's unit suffix, '' or '@<unit>',
 * units.ts), at most what the item took, for each item of the receipt whose window or bucket is still
 * the current one in the stored state, and do nothing otherwise (never over-admit). A part of what a
 * check took (a settle below its estimate) is given back the same way. It runs only
 * when another check has written the key since (otherwise the Cluster store restores the key's snapshot
 * exactly; see stores/cluster.ts). Each give-back is sent once, so fg_undo need not be idempotent.
 */
export interface AlgorithmUndo<S = unknown, V = unknown> {
  readonly undo: string;
  /**
   * Lua defining `local function fg_inc(key)`: the key's incarnation, '' for none (incarnation.ts). The
   * give-back runs fg_undo only while it is the receipt's.
   */
  readonly incarnation: string;
  /**
   * The JavaScript twins: the same receipt text (its items: the frame binds them to the incarnation), the
   * same give-back on a stored value (in place), and the incarnation a stored value holds.
   */
  readonly twin: {
    receipt(st: S, js: readonly number[], ctx: FrameContext): string;
    undo(stored: V | undefined, receipt: string, cost: (unit: string) => number): void;
    incarnation(stored: V | undefined): string | undefined;
  };
}

/** What the JavaScript frame needs from a store: read a key, write it with a TTL. */
export interface FrameStorage {
  get(key: string, now: number): unknown;
  set(key: string, value: unknown, ttlMs: number, now: number): void;
  /**
   * Writes a state key, as a check's save does: its expiry moves later, never earlier (another plan's or
   * rule set's state in the key may need it longer than these rules do; the scripts never shorten a TTL).
   */
  save(key: string, value: unknown, ttlMs: number, now: number): void;
}

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
  /** The Lua name of its unit's cost in a script: COST when the rules count one unit, else COST1, COST2, ... */
  readonly cost: string;
}

export interface RuleSpec {
  /** Its function in the script: r1, r2, ... (1-based rule position). */
  readonly id: string;
  readonly window: number;
  readonly limit: number;
  readonly burst: number;
  readonly precision: number;
  /** The Lua name of its unit's cost (FieldSpec.cost). */
  readonly cost: string;
  readonly field: FieldSpec;
}

/** The rules that apply to identifiers of some kinds, and their fields (in first-rule order). */
export interface MaskSpec {
  /** Its functions' prefix: m1, m2, ... */
  readonly id: string;
  /** '1' where the rule applies (the ARGV mask, engine/call-plan.ts). */
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
  /** The units the rules count, in the order of their first rule (units.ts): one cost each in ARGV[2]. */
  readonly units: readonly string[];
  /** The settle script's charge (FrameContext.charge): commits past what the rules admit. */
  readonly charge: boolean;
}

/** How a template names a field's values where it is used: `v('c')` is `f1_c` in a mask, `c` in a function. */
export type Names = (name: string) => string;

/**
 * One algorithm's Lua, written once, as snippets over names the generator chooses. Every template returns
 * Lua text over these names in scope: NOW, COST (with several units, each unit's COSTn: FieldSpec.cost), PAD, OP, `floor` (math.floor), `fmt` (string.format: '%d'
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
  /** Statements adding the field's cost (`f.cost`: COST, or its unit's) to its values, in place. */
  commit(f: FieldSpec, ctx: CompileContext, v: Names): string;
  /** Statements writing the mask's fields (and idVars) to `key`, with its TTL. */
  save(m: MaskSpec, ctx: CompileContext, v: (f: FieldSpec) => Names): string;
  /** A Lua expression: the field's undo-receipt item (AlgorithmUndo) after a commit. */
  receipt(f: FieldSpec, ctx: CompileContext, v: Names): string;
}
