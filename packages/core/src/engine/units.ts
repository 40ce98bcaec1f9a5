import { ArgumentError, describeValue } from '../kernel/errors';
import type { Runtime } from '../kernel/runtime';
import { InFlight } from './inflight';

/*
 * A call's cost when a plan's rules count several units (docs/budgets.md): what the engine keeps of it, how
 * it is read from a caller, and the in-process guards (units in flight, what 'open' admitted) per unit.
 * A plan whose rules count one unit (whatever its name) takes one number all the way, as before units.
 */

/** Largest cost of one unit in one call. */
export const MAX_COST = 1_000_000_000;

/** A cost per unit, for a plan whose rules count several. */
export interface UnitCosts {
  /** The script's ARGV[2]: the costs in the plan's unit order, joined by ':' (scripts/units.ts). */
  readonly arg: string;
  /** Per unit of the plan, in its order. */
  readonly list: readonly number[];
  /** By unit name. */
  readonly byUnit: Readonly<Record<string, number>>;
  /** The plan's units, in order (the array readCost() was given). */
  readonly units: readonly string[];
}

/** What a check costs: one number for every rule (a plan of one unit), or a cost per unit. */
export type CallCost = number | UnitCosts;

function unitCost(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_COST) {
    throw new ArgumentError(`${what} must be a non-negative integer; got ${describeValue(value)}`);
  }
  return value;
}

/**
 * Reads a call's cost for a plan counting `units` (in order) of a limiter counting `all`: a number (every
 * rule's), or an object naming a cost per unit. A unit the object names that no rule of the limiter counts,
 * or a unit of the plan it leaves out, is an ArgumentError naming it: never a cost silently read as 0.
 * `what` names the value in messages ('cost', 'settle(actual)').
 */
export function readCost(input: unknown, units: readonly string[], all: ReadonlySet<string>, what = 'cost'): CallCost {
  // A cost this module read already: as it is for the same units, else read again from its costs by unit.
  if (input instanceof ReadCosts) return input.units === units ? input : readCost(input.byUnit, units, all, what);
  const cost = input ?? 1;
  if (typeof cost !== 'object' || cost === null || Array.isArray(cost)) {
    const n = unitCost(cost, what);
    return units.length === 1
      ? n
      : new ReadCosts(
          units.map(() => n),
          units,
        );
  }
  const given = cost as Record<string, unknown>;
  for (const unit of Object.keys(given)) {
    if (!all.has(unit)) {
      throw new ArgumentError(`${what} names the unit '${unit}', which no rule of this limiter counts (units: ${[...all].join(', ')})`);
    }
  }
  const list = units.map((unit) => {
    if (!Object.hasOwn(given, unit)) {
      throw new ArgumentError(`${what} leaves out the unit '${unit}', which rules of this plan count (give each: ${units.join(', ')})`);
    }
    return unitCost(given[unit], `${what}.${unit}`);
  });
  return units.length === 1 ? list[0]! : new ReadCosts(list, units);
}

/** Costs per unit as readCost() read them, for the plan's `units` (that array itself: readCost() takes it back as is). */
class ReadCosts implements UnitCosts {
  readonly arg: string;
  readonly byUnit: Readonly<Record<string, number>>;

  constructor(
    readonly list: readonly number[],
    readonly units: readonly string[],
  ) {
    this.arg = list.join(':');
    const byUnit: Record<string, number> = {};
    for (let k = 0; k < units.length; k++) byUnit[units[k]!] = list[k]!;
    this.byUnit = byUnit;
  }
}

/**
 * A call cost with at least 1 of every unit (a reservation's estimate, engine/reserve.ts), itself when it has
 * that already; still a cost readCost() takes back as is.
 */
export function atLeastOne(cost: CallCost): CallCost {
  if (typeof cost === 'number') return Math.max(cost, 1);
  if (cost.list.every((n) => n >= 1)) return cost;
  return new ReadCosts(
    cost.list.map((n) => Math.max(n, 1)),
    cost.units,
  );
}

/** A call cost as one number for messages and local decisions: the number, or the largest unit cost. */
export const costScalar = (cost: CallCost): number => (typeof cost === 'number' ? cost : Math.max(...cost.list));

/** Whether a call cost commits anything. */
export const costPositive = (cost: CallCost): boolean => (typeof cost === 'number' ? cost > 0 : cost.list.some((n) => n > 0));

/** The per-unit cost of `cost` as a list over `units` (a number: the same for each). */
export const listOf = (cost: CallCost, units: readonly string[]): readonly number[] =>
  typeof cost === 'number' ? units.map(() => cost) : cost.list;

/**
 * Units in flight per unit (inflight.ts): one InFlight per unit of the plan, each capped by that unit's
 * rules, entered in the units' order (the same order for every check: no two checks wait on each other
 * round a cycle) and left together.
 */
export class UnitsInFlight {
  private readonly parts: InFlight[];

  constructor(
    private readonly units: readonly string[],
    capacityOf: (id: string, unit: string) => number,
    private readonly runtime: Runtime,
  ) {
    this.parts = units.map((unit) => new InFlight((id) => capacityOf(id, unit), runtime));
  }

  enter(ids: readonly string[], cost: CallCost, budgetMs: number): true | Promise<boolean> {
    return this.from(0, ids, listOf(cost, this.units), budgetMs, this.runtime.now());
  }

  private from(k: number, ids: readonly string[], list: readonly number[], budgetMs: number, started: number): true | Promise<boolean> {
    for (; k < this.parts.length; k++) {
      const entered = this.parts[k]!.enter(ids, list[k]!, budgetMs - (this.runtime.now() - started));
      if (entered === true) continue;
      const at = k;
      return entered.then((ok) => {
        if (!ok) {
          for (let q = 0; q < at; q++) this.parts[q]!.leave(ids, list[q]!);
          return false;
        }
        return this.from(at + 1, ids, list, budgetMs, started);
      });
    }
    return true;
  }

  leave(ids: readonly string[], cost: CallCost): void {
    const list = listOf(cost, this.units);
    this.parts.forEach((p, k) => p.leave(ids, list[k]!));
  }

  busy(ids: readonly string[]): boolean {
    return this.parts.some((p) => p.busy(ids));
  }
}
