import { ArgumentError, describeValue } from './errors';
import { encodeIdentifier, identifierKind, type KeyScheme } from './keys';
import type { ResolvedOptions } from './options';
import { ruleArgs } from './algorithms/frame';
import { ruleMask } from './algorithms/compile';

const MAX_IDENTIFIERS = 64;
const MAX_COST = 1_000_000_000;
/** Test-mode TTL padding: the caller's clock may run ahead of the real time Redis expires keys in. */
const CLOCK_PAD_MS = 600_000;

/** One check, ready for the store: the frame's KEYS and ARGV (see algorithms/frame.ts). */
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
  private readonly plans = new Map<string, KindPlan>();

  constructor(private readonly opts: ResolvedOptions, private readonly keys: KeyScheme) {
    const clock = opts.clock;
    this.nowArg = clock ? () => String(clock()) : () => '';
    this.pad = clock ? CLOCK_PAD_MS : 0;
    this.ruleArgs = ruleArgs(opts.rules, opts.algorithm);
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
    const ruleLists: number[][] = [];
    for (const id of ids) {
      const enc = encodeIdentifier(id);
      keys.push(this.keys.state(enc), this.keys.block(enc));
      const plan = this.plan(id);
      masks.push(plan.mask);
      ruleLists.push(plan.rules);
    }
    const penalty = this.opts.penalty && this.opts.mode === 'enforce' ? '1' : '0';
    const argv = [op, cost, penalty, this.nowArg(), this.pad, ...this.ruleArgs, ...masks];
    return { ids, keys, argv, ruleLists, cost };
  }

  /** Which rules apply to an identifier: all unscoped ones and those `for` its kind. */
  private plan(id: string): KindPlan {
    const kind = identifierKind(id);
    let plan = this.plans.get(kind);
    if (plan === undefined) {
      const mask = ruleMask(this.opts.rules, kind);
      const rules: number[] = [];
      for (let j = 0; j < mask.length; j++) if (mask[j] === '1') rules.push(j);
      plan = { mask, rules };
      // Kinds come from callers; cap the cache so hostile identifiers cannot grow it without bound.
      if (this.plans.size < 1024) this.plans.set(kind, plan);
    }
    return plan;
  }
}
