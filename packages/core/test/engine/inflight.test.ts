import { InFlight } from '../../src/engine/inflight';
import { deadlines, type Deadline } from '../../src/kernel/deadlines';
import { afterTurn, realNow } from '../../src/kernel/real-timers';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('the process queue: a check waiting for room gives up after the checks it waits on', () => {
  test('a waiter whose deadline falls with its blockers is let in when they settle, even with the lane armed earlier', async () => {
    // The race it guards against is one of timers due in the same millisecond: run it several times.
    for (let round = 0; round < 8; round++) {
      // A lane armed for an earlier command, still in flight: when its timer fires for that one, it re-arms
      // for the next, after the checks below were set.
      const earlier: Deadline = { at: 0, lane: undefined, prev: undefined, next: undefined, expire: () => undefined };
      deadlines.add(earlier, 60, realNow());
      await sleep(25);
      // Capacity 1: a check in flight, whose deadline (60 ms) releases its units as the store's does...
      const inflight = new InFlight(() => 1);
      expect(inflight.enter(['id'], 1, 60)).toBe(true);
      const blocker: Deadline = {
        at: 0,
        lane: undefined,
        prev: undefined,
        next: undefined,
        expire: () => afterTurn(() => inflight.leave(['id'], 1)),
      };
      deadlines.add(blocker, 60, realNow());
      // ... and a second check of the identifier, set in the same turn with the same deadline: it waits.
      const admitted = await inflight.enter(['id'], 1, 60);
      expect(admitted).toBe(true);
      inflight.leave(['id'], 1);
      expect(inflight.size).toBe(0);
    }
  });
});

describe('units in flight, among many identifiers', () => {
  test("a busy identifier's entry is not deleted and set again at every check; settled ones go once they outnumber those in flight", () => {
    // A delete leaves a slot in the key's hash chain until V8 compacts the table: with 10,000 identifiers
    // in flight, deleting a busy identifier's entry at every settle made its next check walk its own past
    // copies (tens of µs per check, against under 1 µs). Deletes are counted here, not timed.
    const inflight = new InFlight(() => 1e9);
    for (let i = 0; i < 10_000; i++) expect(inflight.enter([`other:${i}`], 1, 1_000)).toBe(true);
    const units = (inflight as unknown as { units: { counts: Map<string, number> } }).units.counts;
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
    expect(inflight.size).toBe(10_000);
    // The others settle: those at 0 go, in passes, once they outnumber those still in flight.
    for (let i = 0; i < 10_000; i++) inflight.leave([`other:${i}`], 1);
    expect(inflight.size).toBe(0);
    expect(units.size).toBeLessThanOrEqual(64);
    // A cost above the capacity still goes alone, with nothing in flight: an entry at 0 counts for nothing.
    const tight = new InFlight(() => 1);
    expect(tight.enter(['x'], 1, 1_000)).toBe(true);
    tight.leave(['x'], 1);
    expect(tight.enter(['x'], 5, 1_000)).toBe(true);
    expect(tight.busy(['x'])).toBe(true);
    deletes.mockRestore();
  });
});
