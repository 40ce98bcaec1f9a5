import { ArgumentError, describeValue } from '../kernel/errors';
import { encodeIdentifier, identifierKind, type KeyScheme, UNKNOWN_IP } from '../scripts/keys';
import type { ResolvedOptions } from './options';
import type { Rule } from '../config/rules';
import { ruleArgs } from '../scripts/frame';
import { ruleMask } from '../scripts/compiler';
import { newIncarnation } from '../scripts/incarnation';
import type { RuleRoom } from './uncounted';

const MAX_IDENTIFIERS = 64;
const MAX_COST = 1_000_000_000;
/** Test-mode TTL padding: the caller's clock may run ahead of the real time Redis expires keys in. */
const CLOCK_PAD_MS = 600_000;

/** One check, ready for the store: the frame's KEYS and ARGV (see scripts/frame.ts). */
export interface Prepared {
  ids: string[];
  keys: string[];
  argv: (string | number)[];
  ruleLists: number[][];
  cost: number;
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
}

/**
 * Turns a call's identifiers and cost into the frame's KEYS and ARGV. Everything that depends only on the
 * limiter (the rules' arguments, the rules that apply to each identifier kind) is worked out once.
 */
export class CallPlanner {
  /** '' (the script reads Redis TIME) or the test clock's time. */
  readonly nowArg: () => string;
  readonly pad: number;
  private readonly ruleArgs: (string | number)[];
  private readonly kinds = new Map<string, KindPlan>();

  /** `rules`: the rule set of one plan (ResolvedOptions.plans), which this planner prepares checks for. */
  constructor(
    private readonly opts: ResolvedOptions,
    private readonly keys: KeyScheme,
    private readonly rules: readonly Rule[] = opts.rules,
  ) {
    const clock = opts.clock;
    this.nowArg = clock ? () => String(clock()) : () => '';
    this.pad = clock ? CLOCK_PAD_MS : 0;
    this.ruleArgs = ruleArgs(rules, opts.algorithm);
  }

  /** Validates identifiers and removes duplicates (they would count twice). */
  identifiers(input: string | readonly string[]): string[] {
    const list = typeof input === 'string' ? [input] : input;
    if (!Array.isArray(list) || list.length === 0) {
      throw new ArgumentError(`identifiers must be a non-empty string or array of strings; got ${describeValue(input)}`);
    }
    const ids = list.length === 1 ? [list[0]] : [...new Set(list)];
    if (ids.length > MAX_IDENTIFIERS) throw new ArgumentError(`at most ${MAX_IDENTIFIERS} identifiers per call; got ${ids.length}`);
    for (const id of ids) {
      if (typeof id !== 'string' || id.length === 0) {
        throw new ArgumentError(`every identifier must be a non-empty string; got ${describeValue(id)}`);
      }
    }
    return ids as string[];
  }

  /** Validates a call's cost (default 1). */
  cost(costInput: unknown): number {
    const cost = costInput ?? 1;
    if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0 || cost > MAX_COST) {
      throw new ArgumentError(`cost must be a non-negative integer; got ${describeValue(cost)}`);
    }
    return cost;
  }

  /** KEYS and ARGV for validated identifiers and cost (see identifiers() and cost()). */
  prepare(op: 'c' | 'p', ids: string[], cost: number): Prepared {
    const keys: string[] = [];
    const masks: string[] = [];
    const lockable: string[] = [];
    const ruleLists: number[][] = [];
    for (const id of ids) {
      const enc = encodeIdentifier(id);
      keys.push(this.keys.state(enc), this.keys.block(enc));
      const plan = this.kindPlan(id);
      masks.push(plan.mask);
      // `ip:unknown` is every client whose address could not be read: locking it out would lock them all.
      lockable.push(id === UNKNOWN_IP ? '0' : plan.lockable);
      ruleLists.push(plan.rules);
    }
    // The lockout keys follow all the identifiers' state and block keys, then their block index keys (a
    // lockout writes a block, and its index entry in the same call: scripts/compiler/, Program.lockout); ARGV has,
    // after the masks, whether each identifier is in the lockout's scope.
    const lockout = this.opts.lockout !== undefined;
    if (lockout) {
      const encs = ids.map(encodeIdentifier);
      for (const enc of encs) keys.push(this.keys.lockout(enc));
      for (const enc of encs) keys.push(this.keys.index(enc));
    }
    const penalty = this.opts.penalty && this.opts.mode === 'enforce' ? '1' : '0';
    // Last, the check's incarnation: a key it creates is given it by the scripts that answer receipts; then,
    // with a lockout, whether each identifier is in its scope.
    const argv = [op, cost, penalty, this.nowArg(), this.pad, ...this.ruleArgs, ...masks, newIncarnation(), ...(lockout ? lockable : [])];
    return { ids, keys, argv, ruleLists, cost };
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
      let capacity = Infinity;
      for (let j = 0; j < mask.length; j++) {
        if (mask[j] !== '1') continue;
        rules.push(j);
        const rule = this.rules[j]!;
        rooms.push({ windowMs: rule.windowMs, capacity: this.opts.algorithm.capacity(rule) });
        capacity = Math.min(capacity, rooms[rooms.length - 1]!.capacity);
      }
      plan = { mask, rules, capacity, rooms, lockable: this.opts.lockout?.scope.includes(kind) ? '1' : '0' };
      // Kinds come from callers; cap the cache so hostile identifiers cannot grow it without bound.
      if (this.kinds.size < 1024) this.kinds.set(kind, plan);
    }
    return plan;
  }
}
