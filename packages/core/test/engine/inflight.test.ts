import { InFlight } from '../../src/engine/inflight';
import type { Deadline } from '../../src/kernel/deadlines';
import { virtualRuntime } from '../../src/kernel/virtual-runtime';

/** A deadline entry that runs `expire` when it falls due. */
const entry = (expire: () => void = () => undefined): Deadline => ({ at: 0, lane: undefined, prev: undefined, next: undefined, expire });

describe('the process queue: a check waiting for room gives up after the checks it waits on', () => {
  test('a waiter whose deadline falls with its blockers is let in when they settle, even with the lane armed earlier', async () => {
    const rt = virtualRuntime();
    // A lane armed for an earlier command, still in flight: when its timer fires for that one (at 60 ms), it
    // re-arms for the next, after the checks below were set.
    rt.deadlines.add(entry(), 60, rt.now());
    await rt.advance(25);
    // Capacity 1: a check in flight, whose deadline (60 ms) releases its units as the store's does...
    const inflight = new InFlight(() => 1, rt);
    expect(inflight.enter(['id'], 1, 60)).toBe(true);
    rt.deadlines.add(
      entry(() => rt.afterTurn(() => inflight.leave(['id'], 1))),
      60,
      rt.now(),
    );
    // ... and a second check of the identifier, set in the same turn with the same deadline: it waits.
    const waiting = inflight.enter(['id'], 1, 60);
    expect(waiting).toBeInstanceOf(Promise);
    // Both fall due at 85 ms: the blocker's release runs first, and lets the waiter in.
    expect(await rt.until(waiting as Promise<boolean>)).toBe(true);
    expect(rt.now()).toBe(85);
    inflight.leave(['id'], 1);
    expect(inflight.size).toBe(0);
  });

  test('a waiter nothing lets in gives up at its deadline, in virtual time, and holds nothing', async () => {
    const rt = virtualRuntime();
    const inflight = new InFlight(() => 2, rt);
    expect(inflight.enter(['id'], 2, 100)).toBe(true);
    await rt.advance(30);
    const waiting = inflight.enter(['id'], 1, 100) as Promise<boolean>;
    expect(await rt.until(waiting)).toBe(false);
    expect(rt.now()).toBe(130);
    // The one in flight still holds its units; nothing of the waiter's was counted.
    expect(inflight.busy(['id'])).toBe(true);
    inflight.leave(['id'], 2);
    expect(inflight.size).toBe(0);
    expect(rt.pending).toBe(0);
  });
});

describe('units in flight, among many identifiers', () => {
  test("a busy identifier's entry is not deleted and set again at every check; settled ones go once they outnumber those in flight", () => {
    // A delete leaves a slot in the key's hash chain until V8 compacts the table: with 10,000 identifiers
    // in flight, deleting a busy identifier's entry at every settle made its next check walk its own past
    // copies (tens of µs per check, against under 1 µs). Deletes are counted here, not timed.
    const inflight = new InFlight(() => 1e9, virtualRuntime());
    for (let i = 0; i < 10_000; i++) expect(inflight.enter([`other:${i}`], 1, 1_000)).toBe(true);
    // The live Map: a sweep replaces it (kernel/counts.ts).
    const live = () => (inflight as unknown as { units: { counts: Map<string, number> } }).units.counts;
    const units = live();
    const deletes = jest.spyOn(units, 'delete');
    for (let i = 0; i < 2_000; i++) {
      const ids = i % 2 === 0 ? ['client:a', 'org:1'] : ['client:b', 'org:1'];
      expect(inflight.busy(ids)).toBe(false);
      expect(inflight.enter(ids, 1, 1_000)).toBe(true);
      expect(inflight.busy(['org:1'])).toBe(true);
      inflight.leave(ids, 1);
    }
    // Deleting at every settle was 2 per check: 4,000.
    expect(deletes.mock.calls.length).toBe(0);
    expect(live()).toBe(units);
    expect(inflight.size).toBe(10_000);
    // The others settle: those at 0 go, in passes, once they outnumber those still in flight.
    for (let i = 0; i < 10_000; i++) inflight.leave([`other:${i}`], 1);
    expect(inflight.size).toBe(0);
    expect(live().size).toBeLessThanOrEqual(64);
    // A cost above the capacity still goes alone, with nothing in flight: an entry at 0 counts for nothing.
    const tight = new InFlight(() => 1, virtualRuntime());
    expect(tight.enter(['x'], 1, 1_000)).toBe(true);
    tight.leave(['x'], 1);
    expect(tight.enter(['x'], 5, 1_000)).toBe(true);
    expect(tight.busy(['x'])).toBe(true);
    deletes.mockRestore();
  });
});
