import type { PairState } from '../kernel/decision';
import { OldestKey, RoundRobin, UseOrder, type Placed } from '../kernel/insertion-order';

/*
 * What `failure: 'open'` may admit of one identifier (docs/security.md, "'open' admits no flood").
 *
 * The policy admits a check the store could not answer, and nothing counted it: not Redis, which never ran
 * it, and not the units in flight (inflight.ts), which it leaves as it settles. So every deadline of a
 * flood from one client bought another round of admissions (a client still connecting to a paused Redis:
 * up to 410 of 1,000 checks against a limit of 100), and Redis, once it answered, admitted its own full
 * limit on top. Here a limiter keeps, per identifier, the units the policy admitted (uncounted) and, for a
 * client with several checks in flight at once (a flood), the units Redis admitted it (counted), with when:
 * - the policy admits a check only while, for every rule that applies, both within the rule's window leave
 *   room for the cost: never more than a rule's capacity per window, per process, Redis's share included;
 * - an answer from the store admits only while what the store has left covers the uncounted units (its
 *   count plus them stays within the limit); otherwise the check is denied here, though the store counted it;
 * - a check the uncounted units alone leave no room for is denied at once, without asking the store.
 * Units count for the window of each rule they are checked against, so a rule of 5 per minute forgets them
 * after a minute while a rule of 100 per day keeps them a day. Memory: at most SPANS spans per identifier
 * with such units, and at most `maxIds` identifiers (least recently noted forgotten first).
 */

/** A rule as seen from here: its window, and the most units it can admit in it (Algorithm.capacity). */
export interface RuleRoom {
  readonly windowMs: number;
  readonly capacity: number;
  /** What the rule counts, when not requests (engine/units.ts keeps each unit's apart). */
  unit?: string;
}

/** An identifier with no room for a check, and when enough of its units are old enough to make room. */
export interface NoRoom {
  identifier: string;
  retryAfterMs: number;
}

type Rooms = (id: string) => readonly RuleRoom[];

interface Span {
  /** When (the limiter's clock) its first units were added: a span covers at most 1/SPANS of a window. */
  from: number;
  /** When its last units were added: all of them count from then, a little longer than alone, never shorter. */
  at: number;
  /** Admitted by the policy: Redis never counted them. */
  uncounted: number;
  /** Admitted by Redis (counted there). */
  counted: number;
}

interface Entry extends Placed {
  /** Oldest first. */
  spans: Span[];
  /** The longest window its units were admitted under: after that they count for no rule. */
  keepMs: number;
  /** Whether one of its spans holds uncounted units (only those can refuse a check before or after Redis). */
  uncounted: boolean;
}

/**
 * Spans kept per identifier: units within 1/16 of the shortest window share a span, and past 16 spans
 * (rules of very different windows) the oldest two merge, at the later time.
 */
const SPANS = 16;

export class Uncounted {
  private readonly entries = new Map<string, Entry>();
  /**
   * Entries holding uncounted units. With none (the policy admitted nothing lately, the usual case) only
   * what Redis counted is noted, which refuses nothing: full() and over() are over at once.
   */
  private holding = 0;
  /** The least recently noted identifier first, for the bound. */
  private readonly order = new UseOrder();
  private readonly oldest = new OldestKey(this.entries);
  /** The amortised cleanup's place among the identifiers. */
  private readonly sweep = new RoundRobin(this.entries);

  constructor(
    private readonly now: () => number,
    private readonly maxIds: number,
  ) {}

  /** Identifiers with units noted (for tests). */
  get size(): number {
    return this.entries.size;
  }

  /** Whether any identifier holds units the policy admitted: without them, full() and over() refuse nothing. */
  get holdsUncounted(): boolean {
    return this.holding > 0;
  }

  /**
   * Before a check is sent: the first identifier whose uncounted units leave no room for `cost` under one
   * of its rules, if any. An identifier without them is never refused here, whatever the cost.
   */
  full(ids: readonly string[], cost: number, rooms: Rooms): NoRoom | undefined {
    if (this.holding === 0) return undefined;
    const now = this.now();
    for (const id of ids) {
      const entry = this.live(id, now);
      if (entry === undefined) continue;
      const none = noRoom(id, entry.spans, now, rooms(id), cost, false);
      if (none !== undefined) return none;
    }
    return undefined;
  }

  /**
   * The failure policy admits `cost` units of `ids`: noted (unless `record` is false: a peek), unless one
   * of them has no room for them (a cost above a rule's capacity never has), which is returned instead.
   */
  admit(ids: readonly string[], cost: number, rooms: Rooms, record: boolean): NoRoom | undefined {
    const now = this.now();
    for (const id of ids) {
      const none = noRoom(id, this.live(id, now)?.spans ?? [], now, rooms(id), cost, true);
      if (none !== undefined) return none;
    }
    if (record && cost > 0) this.note(ids, cost, rooms, now, 'uncounted');
    return undefined;
  }

  /**
   * After the store admitted a check: the first pair whose remaining units (less `pending`, what a peek
   * would have consumed) do not cover its identifier's uncounted units within its window, if any.
   */
  over(states: readonly PairState[], pending: number): NoRoom | undefined {
    if (this.holding === 0) return undefined;
    const now = this.now();
    for (const s of states) {
      const entry = this.live(s.identifier, now);
      if (entry === undefined) continue;
      const wait = waitFor(entry.spans, now, s.windowMs, s.remaining - pending, false);
      if (wait > 0) return { identifier: s.identifier, retryAfterMs: Math.max(1, Math.min(wait, s.resetMs)) };
    }
    return undefined;
  }

  /**
   * Redis admitted `cost` units of `ids`: noted when the client is `crowded` (it had other checks in flight:
   * a flood) or holds units the policy admitted, so that the policy counts them. Others cost nothing here:
   * not even a client whose earlier checks were crowded. Noting those too kept every identifier that was
   * crowded once by chance noted at every check for as long as its notes lived (each note renewing them),
   * about 2 µs of CPU on every check of a long-running process (bench/results/ab/ledger-lapse.md); a lone
   * check left unnoted is admitted again by the policy in an outage at most as a sequential client's is.
   */
  counted(ids: readonly string[], cost: number, rooms: Rooms, crowded: boolean): void {
    if (!crowded && !this.holds(ids)) return;
    this.note(ids, cost, rooms, this.now(), 'counted');
  }

  /** Whether one of `ids` holds units the policy admitted that still count for one of its rules. */
  private holds(ids: readonly string[]): boolean {
    if (this.holding === 0) return false;
    const now = this.now();
    return ids.some((id) => this.live(id, now)?.uncounted === true);
  }

  /** Forgets what was noted of `ids` (reset()). */
  forget(ids: readonly string[]): void {
    for (const id of ids) this.drop(id);
  }

  private note(ids: readonly string[], units: number, rooms: Rooms, now: number, kind: 'uncounted' | 'counted'): void {
    for (const id of ids) this.add(id, units, rooms(id), now, kind);
    // Amortised cleanup: per note, the next identifier (round and round, in the order noted) goes once
    // nothing of it counts any more. Those just noted are passed over: a sweep that met a busy client's
    // identifiers at the end at every note would never come round to the others.
    const next = this.sweep.next((id) => ids.includes(id));
    if (next !== undefined) this.live(next, now);
  }

  /** The identifier's entry with the spans no rule counts any more dropped; undefined when none is left. */
  private live(id: string, now: number): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    const spans = entry.spans;
    let old = 0;
    while (old < spans.length && spans[old]!.at <= now - entry.keepMs) old++;
    if (old === spans.length) {
      this.entries.delete(id);
      if (entry.uncounted) this.holding--;
      return undefined;
    }
    if (old > 0) {
      spans.splice(0, old);
      if (entry.uncounted && !spans.some((s) => s.uncounted > 0)) {
        entry.uncounted = false;
        this.holding--;
      }
    }
    return entry;
  }

  private drop(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    this.entries.delete(id);
    if (entry.uncounted) this.holding--;
  }

  private add(id: string, units: number, rooms: readonly RuleRoom[], now: number, kind: 'uncounted' | 'counted'): void {
    // No rule applies to it: nothing to hold back.
    if (rooms.length === 0) return;
    let keepMs = 0;
    let shortestMs = Infinity;
    for (const r of rooms) {
      keepMs = Math.max(keepMs, r.windowMs);
      shortestMs = Math.min(shortestMs, r.windowMs);
    }
    const found = this.live(id, now);
    const entry = found ?? { spans: [], keepMs, uncounted: false, placed: 0 };
    entry.keepMs = Math.max(entry.keepMs, keepMs);
    const spans = entry.spans;
    let last = spans[spans.length - 1];
    if (last === undefined || now - last.from >= shortestMs / SPANS) {
      last = { from: now, at: now, uncounted: 0, counted: 0 };
      spans.push(last);
      if (spans.length > SPANS) {
        spans[1]!.uncounted += spans[0]!.uncounted;
        spans[1]!.counted += spans[0]!.counted;
        spans.shift();
      }
    }
    last.at = Math.max(last.at, now);
    last[kind] += units;
    // Least recently noted first, for the bound.
    if (found !== undefined) this.order.used(this.entries, id, entry);
    else this.order.set(this.entries, id, entry);
    if (kind === 'uncounted' && units > 0 && !entry.uncounted) {
      entry.uncounted = true;
      this.holding++;
    }
    if (this.entries.size > this.maxIds) this.drop(this.oldest.take()!);
  }
}

/**
 * The first of `rules` that the units of `spans` leave no room for `cost` in (all of them when `admitting`
 * for the policy, the uncounted ones before a check is sent), if any. A cost above a rule's capacity only
 * ever fits a check sent to the store with nothing noted: the policy never admits it.
 */
function noRoom(
  id: string,
  spans: readonly Span[],
  now: number,
  rules: readonly RuleRoom[],
  cost: number,
  admitting: boolean,
): NoRoom | undefined {
  for (const room of rules) {
    const wait = waitFor(spans, now, room.windowMs, room.capacity - cost, admitting);
    if (wait > 0) return { identifier: id, retryAfterMs: wait };
  }
  return undefined;
}

/**
 * How long until the units of `spans` within `windowMs` of `now` (the uncounted ones, or all when
 * `all`) come to at most `allowed` (0: they do now). A negative `allowed` (a cost above the capacity)
 * never fits: the whole window, unless there is nothing uncounted and the store is to decide.
 */
function waitFor(spans: readonly Span[], now: number, windowMs: number, allowed: number, all: boolean): number {
  const from = now - windowMs;
  const unitsOf = (s: Span): number => (all ? s.uncounted + s.counted : s.uncounted);
  let held = 0;
  for (const s of spans) if (s.at > from) held += unitsOf(s);
  if (allowed < 0) return all || held > 0 ? Math.max(1, windowMs) : 0;
  for (const s of spans) {
    if (held <= allowed) break;
    if (s.at <= from) continue;
    held -= unitsOf(s);
    if (held <= allowed) return Math.max(1, Math.ceil(s.at + windowMs - now));
  }
  return 0;
}
