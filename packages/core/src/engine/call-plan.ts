import { ArgumentError, describeValue } from '../kernel/errors';
import { encodeIdentifier, identifierKind, type KeyScheme, UNKNOWN_IP } from '../scripts/keys';
import type { ResolvedOptions } from './options';
import { unitOf, unitsOf, type Rule } from '../config/rules';
import { costScalar, MAX_COST, readCost, type CallCost, type UnitCosts } from './units';
import { MASKS_AT } from '../scripts/frame';
import { ruleMask } from '../scripts/compiler';
import { newIncarnation } from '../scripts/incarnation';
import type { RuleRoom } from './uncounted';

const MAX_IDENTIFIERS = 64;
/** Test-mode TTL padding: the caller's clock may run ahead of the real time Redis expires keys in. */
const CLOCK_PAD_MS = 600_000;

/** One check, ready for the store: the frame's KEYS and ARGV (see scripts/frame.ts). */
export interface Prepared {
  ids: string[];
  keys: string[];
  argv: (string | number)[];
  ruleLists: number[][];
  /** The cost as one number: the call's, or with a cost per unit, the largest (messages, local decisions). */
  cost: number;
  /** With rules of several units: the cost per unit (its `arg` is ARGV[2]). */
  costs?: UnitCosts;
}

/** A prepared check (a class, not an object literal: see prepare()). */
class PreparedCheck implements Prepared {
  constructor(
    readonly ids: string[],
    readonly keys: string[],
    readonly argv: (string | number)[],
    readonly ruleLists: number[][],
    readonly cost: number,
    readonly costs: UnitCosts | undefined,
  ) {}
}

interface KindPlan {
  mask: string;
  rules: number[];
  /** The most units one check of this kind can ever be admitted (the tightest applicable rule's capacity). */
  capacity: number;
  /** Whether a lockout may lock identifiers of this kind (`lockout.scope` names it): '1' or '0'. */
  lockable: '1' | '0';
  /** Per applicable rule: its window and capacity (what this process may admit without the store: uncounted.ts). */
  rooms: RuleRoom[];
  /** Per unit of the plan: the tightest capacity among the applicable rules of that unit. */
  unitCapacity: Map<string, number>;
}

/**
 * Turns a call's identifiers and cost into the frame's KEYS and ARGV. Everything that depends only on the
 * limiter (the rules that apply to each identifier kind, their masks) is worked out once.
 */
export class CallPlanner {
  /** '' (the script reads Redis TIME) or the test clock's time. */
  readonly nowArg: () => string;
  readonly pad: number;
  private readonly kinds = new Map<string, KindPlan>();
  /** The units this plan's rules count, in the order of their first rule (one cost each in ARGV[2]). */
  readonly units: readonly string[];
  /** The units any plan's rules count: what a call's cost may name. */
  readonly allUnits: ReadonlySet<string>;

  /**
   * `rules`: the rule set of one plan (ResolvedOptions.plans), which this planner prepares checks for.
   * `incarnations`: whether a script that answers receipts may run its checks (a refundable limiter's, a
   * Cluster's split check): only then does a check carry a new incarnation (scripts/incarnation.ts); the
   * plain script ignores that argument, so a check of any other limiter sends '' there and makes none.
   */
  constructor(
    private readonly opts: ResolvedOptions,
    private readonly keys: KeyScheme,
    private readonly rules: readonly Rule[] = opts.rules,
    private readonly incarnations = true,
  ) {
    const clock = opts.clock;
    this.nowArg = clock ? () => String(clock()) : () => '';
    this.pad = clock ? CLOCK_PAD_MS : 0;
    this.units = unitsOf(rules);
    this.allUnits = new Set(opts.plans.flatMap((p) => unitsOf(p.rules)));
  }

  /**
   * Validates identifiers and removes duplicates (they would count twice).
   * The array is made by Array.of, slice or Array.from, not an array literal: V8 allocates a literal in the old
   * generation directly once nearly all it made survived a young collection, as the checks of a server's
   * first burst do while they wait in flight, and decides that for good. Every later check's array was then
   * born old, and carried its identifier (a string new with each request) into the old generation at the
   * next young collection: 34 bytes a request and a full collection every few seconds in `npm run bench`'s
   * Fastify server (test/engine/call-plan-young.test.ts). Array.of, slice and Array.from carry no allocation site to decide.
   */
  identifiers(input: string | readonly string[]): string[] {
    const list = typeof input === 'string' ? Array.of(input) : input;
    if (!Array.isArray(list) || list.length === 0) {
      throw new ArgumentError(`identifiers must be a non-empty string or array of strings; got ${describeValue(input)}`);
    }
    const ids = list.length === 1 ? list.slice(0, 1) : Array.from(new Set(list));
    if (ids.length > MAX_IDENTIFIERS) throw new ArgumentError(`at most ${MAX_IDENTIFIERS} identifiers per call; got ${ids.length}`);
    for (const id of ids) {
      if (typeof id !== 'string' || id.length === 0) {
        throw new ArgumentError(`every identifier must be a non-empty string; got ${describeValue(id)}`);
      }
    }
    return ids as string[];
  }

  /**
   * Validates a call's cost (default 1): a number for every rule, or a cost per unit (engine/units.ts); one
   * number when this plan's rules count one unit.
   */
  cost(costInput: unknown, what = 'cost'): CallCost {
    if (
      typeof costInput === 'number' &&
      this.units.length === 1 &&
      Number.isInteger(costInput) &&
      costInput >= 0 &&
      costInput <= MAX_COST
    ) {
      return costInput;
    }
    return readCost(costInput, this.units, this.allUnits, what);
  }

  /** KEYS and ARGV for validated identifiers and cost (see identifiers() and cost()). */
  prepare(op: 'c' | 'p', ids: string[], callCost: CallCost): Prepared {
    const n = ids.length;
    const lockout = this.opts.lockout !== undefined;
    const keys = new Array<string>(lockout ? 4 * n : 2 * n);
    const ruleLists = new Array<number[]>(n);
    // The rules are not sent: the script has them as constants (scripts/frame.ts).
    const base = MASKS_AT;
    const argv = new Array<string | number>(base + n + 1 + (lockout ? n : 0));
    for (let i = 0; i < n; i++) {
      const id = ids[i]!;
      const enc = encodeIdentifier(id);
      keys[2 * i] = this.keys.state(enc);
      keys[2 * i + 1] = this.keys.block(enc);
      const plan = this.kindPlan(id);
      argv[base + i] = plan.mask;
      // `ip:unknown` is every client whose address could not be read: locking it out would lock them all.
      if (lockout) argv[base + n + 1 + i] = id === UNKNOWN_IP ? '0' : plan.lockable;
      ruleLists[i] = plan.rules;
    }
    // The lockout keys follow all the identifiers' state and block keys, then their block index keys (a
    // lockout writes a block, and its index entry in the same call: scripts/compiler/, Program.lockout); ARGV has,
    // after the masks, whether each identifier is in the lockout's scope.
    if (lockout) {
      for (let i = 0; i < n; i++) {
        const enc = encodeIdentifier(ids[i]!);
        keys[2 * n + i] = this.keys.lockout(enc);
        keys[3 * n + i] = this.keys.index(enc);
      }
    }
    // Last, the check's incarnation: a key it creates is given it by the scripts that answer receipts ('' where
    // none can run it); then, with a lockout, whether each identifier is in its scope.
    argv[0] = op;
    argv[1] = typeof callCost === 'number' ? callCost : callCost.arg;
    argv[2] = this.opts.penalty && this.opts.mode === 'enforce' ? '1' : '0';
    argv[3] = this.nowArg();
    argv[4] = this.pad;
    argv[base + n] = this.incarnations ? newIncarnation() : '';
    const cost = costScalar(callCost);
    return new PreparedCheck(ids, keys, argv, ruleLists, cost, typeof callCost === 'number' ? undefined : callCost);
  }

  /** A rule's mask for `id` (which rules apply to it), as prepare() sends it. */
  maskOf(id: string): string {
    return this.kindPlan(id).mask;
  }

  /** The tightest capacity among the rules of `unit` that apply to `id` (Infinity when none does). */
  capacityOf(id: string, unit: string): number {
    return this.kindPlan(id).unitCapacity.get(unit) ?? Infinity;
  }

  /** The tightest capacity among the rules that apply to `id` (Infinity when none does). */
  capacity(id: string): number {
    return this.kindPlan(id).capacity;
  }

  /** The window and capacity of each rule that applies to `id` (none: an empty list). */
  readonly rooms = (id: string): readonly RuleRoom[] => this.kindPlan(id).rooms;

  /** Which rules apply to an identifier: all unscoped ones and those `for` its kind. */
  private kindPlan(id: string): KindPlan {
    const kind = identifierKind(id);
    let plan = this.kinds.get(kind);
    if (plan === undefined) {
      const mask = ruleMask(this.rules, kind);
      const rules: number[] = [];
      const rooms: RuleRoom[] = [];
      const unitCapacity = new Map<string, number>();
      let capacity = Infinity;
      for (let j = 0; j < mask.length; j++) {
        if (mask[j] !== '1') continue;
        rules.push(j);
        const rule = this.rules[j]!;
        const room: RuleRoom = { windowMs: rule.windowMs, capacity: this.opts.algorithm.capacity(rule) };
        if (rule.unit !== undefined) room.unit = rule.unit;
        rooms.push(room);
        capacity = Math.min(capacity, room.capacity);
        unitCapacity.set(unitOf(rule), Math.min(unitCapacity.get(unitOf(rule)) ?? Infinity, room.capacity));
      }
      plan = { mask, rules, capacity, rooms, unitCapacity, lockable: this.opts.lockout?.scope.includes(kind) ? '1' : '0' };
      // Kinds come from callers; cap the cache so hostile identifiers cannot grow it without bound.
      if (this.kinds.size < 1024) this.kinds.set(kind, plan);
    }
    return plan;
  }
}
