import { DeadlineQueue, type Deadline } from '../../src/kernel/deadlines';
import { realRuntime } from '../../src/kernel/runtime';
import { virtualRuntime } from '../../src/kernel/virtual-runtime';

/*
 * The virtual runtime (kernel/virtual-runtime.ts): time moves only when the test moves it, and its timers,
 * promises and end-of-turn callbacks run in the order a real event loop runs them.
 */

test('time stands still until advanced; timers fire in order of time, then of arming, each at its own time', async () => {
  const rt = virtualRuntime(Date.UTC(2030, 0, 1));
  const log: string[] = [];
  rt.timeout(() => log.push(`b@${rt.now()}`), 20);
  rt.timeout(() => log.push(`a@${rt.now()}`), 10);
  rt.timeout(() => log.push(`c@${rt.now()}`), 20);
  const cancel = rt.timeout(() => log.push('cancelled'), 15);
  cancel();
  expect(rt.pending).toBe(3);
  await new Promise((r) => setImmediate(r)); // a real turn: nothing virtual follows real time
  expect(log).toEqual([]);
  await rt.advance(19);
  expect(log).toEqual(['a@10']);
  expect(rt.now()).toBe(19);
  await rt.advance(1);
  expect(log).toEqual(['a@10', 'b@20', 'c@20']);
  expect(rt.wall()).toBe(Date.UTC(2030, 0, 1) + 20);
  expect(rt.pending).toBe(0);
});

test("a timer's promises run before the next timer of the same instant; end-of-turn callbacks after all of them", async () => {
  const rt = virtualRuntime();
  const log: string[] = [];
  rt.timeout(() => {
    log.push('timer 1');
    rt.afterTurn(() => log.push('end of turn'));
    void Promise.resolve()
      .then(() => undefined)
      .then(() => log.push('timer 1 promise'));
  }, 5);
  rt.timeout(() => log.push('timer 2'), 5);
  await rt.advance(5);
  expect(log).toEqual(['timer 1', 'timer 1 promise', 'timer 2', 'end of turn']);
});

test('a timer armed for the current instant by a firing timer runs after the end of the turn, as the next iteration', async () => {
  const rt = virtualRuntime();
  const log: string[] = [];
  rt.timeout(() => {
    log.push('first');
    rt.afterTurn(() => log.push('end of turn'));
    rt.timeout(() => log.push('zero-delay'), 0);
  }, 1);
  await rt.advance(1);
  expect(log).toEqual(['first', 'end of turn', 'zero-delay']);
});

test('outside advance(), an end-of-turn callback runs at the real end of the turn, and time does not move', async () => {
  const rt = virtualRuntime();
  let ran = false;
  rt.afterTurn(() => (ran = true));
  expect(ran).toBe(false);
  await new Promise((r) => setImmediate(r));
  expect(ran).toBe(true);
  expect(rt.now()).toBe(0);
});

test('until() moves time only as far as the promise needs, and says when nothing can settle it', async () => {
  const rt = virtualRuntime();
  const later = new Promise<string>((resolve) => rt.timeout(() => resolve('done'), 250));
  rt.timeout(() => undefined, 1_000);
  expect(await rt.until(later)).toBe('done');
  expect(rt.now()).toBe(250);
  await expect(rt.until(new Promise(() => undefined))).rejects.toThrow(/did not settle within|nothing left/);
  await expect(rt.until(new Promise(() => undefined))).rejects.toThrow(/nothing left to settle the promise/);
  const slow = new Promise((resolve) => rt.timeout(() => resolve(1), 10_000));
  await expect(rt.until(slow, 5_000)).rejects.toThrow(/did not settle within 5000 ms/);
  await expect(rt.until(Promise.reject(new Error('no')))).rejects.toThrow('no');
});

test('a deadline queue on the virtual runtime: one lane per budget, entries expired in order at their time, an empty lane dropped', async () => {
  const rt = virtualRuntime();
  const log: [string, number][] = [];
  const entry = (name: string): Deadline => ({
    at: 0,
    lane: undefined,
    prev: undefined,
    next: undefined,
    expire: () => log.push([name, rt.now()]),
  });
  const q = rt.deadlines;
  q.add(entry('a'), 40, rt.now());
  await rt.advance(15);
  q.add(entry('b'), 40, rt.now());
  const c = entry('c');
  q.add(c, 40, rt.now());
  q.add(entry('short'), 10, rt.now());
  q.remove(c);
  expect(rt.pending).toBe(2); // one timer per lane, not one per entry
  await rt.advance(100);
  expect(log).toEqual([
    ['short', 25],
    ['a', 40],
    ['b', 55],
  ]);
  expect(rt.pending).toBe(0);
  expect((q as unknown as { lanes: Map<number, unknown> }).lanes.size).toBe(0);
});

test('the real runtime is the process one: its deadline queue is the real one, shared by every limiter', () => {
  expect(realRuntime.deadlines).toBeInstanceOf(DeadlineQueue);
  expect(realRuntime.now()).toBeCloseTo(process.uptime() * 1000, -2);
  expect(Math.abs(realRuntime.wall() - Date.now())).toBeLessThan(1_000);
});
