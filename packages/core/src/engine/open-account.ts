import { localDenial, type Decision, type PairState } from '../kernel/decision';
import { DEFAULT_UNIT } from '../config/rules';
import { Uncounted, type NoRoom, type RuleRoom } from './uncounted';
import { costPositive, listOf, type CallCost } from './units';
import { callCost, type Call } from './plan';

/*
 * What `failure: 'open'` admitted, as a check meets it (docs/security.md, "'open' admits no flood"): a
 * limiter's account of the units the policy admitted without the store (uncounted.ts), asked before a
 * consuming check is sent, when the policy admits one (engine/failure.ts) and when the store admitted one.
 * A plan's rules of several units (docs/budgets.md) keep one account per unit in the one Uncounted: an
 * identifier's units of another unit than requests under its own key (`<id>\0<unit>`), each against its own
 * unit's rules.
 */

export class OpenAccount {
  /** The units the policy admitted, and those Redis admitted a flood, per identifier. */
  readonly uncounted: Uncounted;

  /** `now`: the limiter's clock (its `clock`, else its runtime's); at most `maxIds` identifiers noted. */
  constructor(now: () => number, maxIds: number) {
    this.uncounted = new Uncounted(now, maxIds);
  }

  /** Identifiers with units noted (for tests). */
  get size(): number {
    return this.uncounted.size;
  }

  /**
   * Before a consuming check is sent: its denial here when what the policy admitted of one of its
   * identifiers fills one of its rules (Redis could only deny it), else undefined.
   */
  refuse(call: Call): Decision | undefined {
    const cost = callCost(call);
    if (!costPositive(cost)) return undefined;
    const none = byUnit.full(this.uncounted, call.ids, cost, call.plan.planner.units, call.plan.planner.rooms);
    return none && noRoom(none, call.cost);
  }

  /**
   * The policy admits a check the store did not answer: noted (a check's, not a peek's), unless one of its
   * identifiers has no room for it within a rule's capacity per window: then that denial.
   */
  admit(call: Call, op: 'c' | 'p'): Decision | undefined {
    const { planner } = call.plan;
    const none = byUnit.admit(this.uncounted, call.ids, callCost(call), planner.units, planner.rooms, op === 'c');
    return none && noRoom(none, call.cost);
  }

  /**
   * The store admitted a check: its denial here when what the store has left does not cover the units the
   * policy admitted of an identifier; else, for a check that took a place among the units in flight
   * (`counted`), what Redis admitted is noted when the check met a flood of its identifiers (`flood`: others
   * in flight beside it) or they have units noted already.
   */
  answered(call: Call, decision: Decision, op: 'c' | 'p', counted: boolean, flood: boolean): Decision | undefined {
    const cost = callCost(call);
    const { planner } = call.plan;
    const over = byUnit.over(this.uncounted, decision.states, op === 'p' ? cost : 0, planner.units);
    if (over !== undefined) return noRoom(over, call.cost);
    if (counted) byUnit.counted(this.uncounted, call.ids, cost, planner.units, planner.rooms, flood);
    return undefined;
  }

  /** Forgets what was noted of `ids` in every unit (reset()). */
  forget(ids: readonly string[], units: Iterable<string>): void {
    byUnit.forget(this.uncounted, ids, units);
  }
}

/**
 * A check denied in this process because of what the policy admitted without the store: the identifier
 * used its limit here already.
 */
export function noRoom({ identifier, retryAfterMs }: NoRoom, cost: number): Decision {
  return localDenial('limit', identifier, retryAfterMs, cost);
}

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

/** Uncounted's methods over a call's cost per unit. */
const byUnit = {
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
