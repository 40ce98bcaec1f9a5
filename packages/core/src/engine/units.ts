import { ArgumentError, describeValue } from '../kernel/errors';
import type { PairState } from '../kernel/decision';
import { DEFAULT_UNIT } from '../config/rules';
import { InFlight } from './inflight';
import type { NoRoom, RuleRoom, Uncounted } from './uncounted';

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
  const cost = input ?? 1;
  if (typeof cost !== 'object' || cost === null || Array.isArray(cost)) {
    const n = unitCost(cost, what);
    return units.length === 1
      ? n
      : costsOf(
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
  return units.length === 1 ? list[0]! : costsOf(list, units);
}

function costsOf(list: number[], units: readonly string[]): UnitCosts {
  return { arg: list.join(':'), list, byUnit: Object.fromEntries(units.map((u, k) => [u, list[k]!])) };
}

/** A call cost as one number for messages and local decisions: the number, or the largest unit cost. */
export const costScalar = (cost: CallCost): number => (typeof cost === 'number' ? cost : Math.max(...cost.list));

/** Whether a call cost commits anything. */
export const costPositive = (cost: CallCost): boolean => (typeof cost === 'number' ? cost > 0 : cost.list.some((n) => n > 0));

/** The per-unit cost of `cost` as a list over `units` (a number: the same for each). */
const listOf = (cost: CallCost, units: readonly string[]): readonly number[] =>
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
  ) {
    this.parts = units.map((unit) => new InFlight((id) => capacityOf(id, unit)));
  }

  enter(ids: readonly string[], cost: CallCost, budgetMs: number): true | Promise<boolean> {
    return this.from(0, ids, listOf(cost, this.units), budgetMs, performance.now());
  }

  private from(k: number, ids: readonly string[], list: readonly number[], budgetMs: number, started: number): true | Promise<boolean> {
    for (; k < this.parts.length; k++) {
      const entered = this.parts[k]!.enter(ids, list[k]!, budgetMs - (performance.now() - started));
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

/*
 * What 'open' admitted (uncounted.ts), per unit: one Uncounted holds them all, an identifier's units of
 * another unit than requests under its own key (`<id>\0<unit>`), each against its own unit's rules.
 */
type Rooms = (id: string) => readonly RuleRoom[];
const keyOf = (id: string, unit: string): string => (unit === DEFAULT_UNIT ? id : `${id}\u0000${unit}`);
const idOf = (key: string): string => {
  const z = key.indexOf('\u0000');
  return z === -1 ? key : key.slice(0, z);
};
const unitRooms =
  (rooms: Rooms, unit: string): Rooms =>
  (key) =>
    rooms(idOf(key)).filter((r) => (r.unit ?? DEFAULT_UNIT) === unit);
const unmap = (none: NoRoom | undefined): NoRoom | undefined => none && { ...none, identifier: idOf(none.identifier) };

/** Whether a call is of the plain kind: one unit, requests (every call before units): the inner methods, unchanged. */
const plain = (units: readonly string[]): boolean => units.length === 1 && units[0] === DEFAULT_UNIT;

export const uncountedByUnit = {
  full(u: Uncounted, ids: readonly string[], cost: CallCost, units: readonly string[], rooms: Rooms): NoRoom | undefined {
    // Nothing the policy admitted: nothing to refuse, and nothing to map per unit first.
    if (!u.holdsUncounted) return undefined;
    if (plain(units)) return u.full(ids, cost as number, rooms);
    const list = listOf(cost, units);
    for (let k = 0; k < units.length; k++) {
      const none = u.full(
        ids.map((id) => keyOf(id, units[k]!)),
        list[k]!,
        unitRooms(rooms, units[k]!),
      );
      if (none !== undefined) return unmap(none);
    }
    return undefined;
  },
  admit(u: Uncounted, ids: readonly string[], cost: CallCost, units: readonly string[], rooms: Rooms, record: boolean): NoRoom | undefined {
    if (plain(units)) return u.admit(ids, cost as number, rooms, record);
    const list = listOf(cost, units);
    // Every unit has room before any is noted.
    for (let k = 0; k < units.length; k++) {
      const none = u.admit(
        ids.map((id) => keyOf(id, units[k]!)),
        list[k]!,
        unitRooms(rooms, units[k]!),
        false,
      );
      if (none !== undefined) return unmap(none);
    }
    if (record)
      units.forEach((unit, k) =>
        u.admit(
          ids.map((id) => keyOf(id, unit)),
          list[k]!,
          unitRooms(rooms, unit),
          true,
        ),
      );
    return undefined;
  },
  over(u: Uncounted, states: readonly PairState[], pending: CallCost, units: readonly string[]): NoRoom | undefined {
    if (!u.holdsUncounted) return undefined;
    if (plain(units)) return u.over(states, pending as number);
    const list = listOf(pending, units);
    for (let k = 0; k < units.length; k++) {
      const mine = states
        .filter((s) => (s.unit ?? DEFAULT_UNIT) === units[k])
        .map((s) => ({ ...s, identifier: keyOf(s.identifier, units[k]!) }));
      const none = u.over(mine, list[k]!);
      if (none !== undefined) return unmap(none);
    }
    return undefined;
  },
  counted(u: Uncounted, ids: readonly string[], cost: CallCost, units: readonly string[], rooms: Rooms, crowded: boolean): void {
    if (plain(units)) return u.counted(ids, cost as number, rooms, crowded);
    const list = listOf(cost, units);
    units.forEach((unit, k) =>
      u.counted(
        ids.map((id) => keyOf(id, unit)),
        list[k]!,
        unitRooms(rooms, unit),
        crowded,
      ),
    );
  },
  forget(u: Uncounted, ids: readonly string[], units: Iterable<string>): void {
    for (const unit of units) u.forget(ids.map((id) => keyOf(id, unit)));
  },
};
