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
