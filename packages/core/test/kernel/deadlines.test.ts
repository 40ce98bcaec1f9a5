import { DeadlineQueue, type Deadline } from '../../src/kernel/deadlines';
import { realNow } from '../../src/kernel/real-timers';
import { virtualRuntime, type VirtualRuntime } from '../../src/kernel/virtual-runtime';

/*
 * The deadline queue (kernel/deadlines.ts) on a virtual runtime's timers: exact times, no sleeping. The last
 * tests run it on the real timers it has by default.
 */

/** An entry that records when (its clock) it expired. */
function entry(log: { name: string; at: number }[], name: string, onExpire?: () => void, now: () => number = realNow): Deadline {
  return {
    at: 0,
    lane: undefined,
    prev: undefined,
    next: undefined,
    expire() {
      log.push({ name, at: now() });
      onExpire?.();
    },
  };
}

const lanesOf = (q: DeadlineQueue): Map<number, unknown> => (q as unknown as { lanes: Map<number, unknown> }).lanes;

/** A queue on a virtual runtime, and an entry maker on its clock. */
function virtual(): {
  rt: VirtualRuntime;
  q: DeadlineQueue;
  log: { name: string; at: number }[];
  make: (name: string, onExpire?: () => void) => Deadline;
} {
  const rt = virtualRuntime();
  const log: { name: string; at: number }[] = [];
  return { rt, q: new DeadlineQueue(rt), log, make: (name, onExpire) => entry(log, name, onExpire, rt.now) };
}

describe('DeadlineQueue: many deadlines on one timer per budget', () => {
  test('entries of one budget expire in order, each at its deadline (or 1 ms early, as a timer may fire)', async () => {
    const { rt, q, log, make } = virtual();
    for (const name of ['a', 'b', 'c']) {
      q.add(make(name), 40, rt.now());
      await rt.advance(15);
    }
    expect(rt.pending).toBe(1);
    await rt.advance(300);
    expect(log).toEqual([
      { name: 'a', at: 40 },
      { name: 'b', at: 55 },
      { name: 'c', at: 70 },
    ]);
  });

  test('a removed entry never expires, wherever it was in its lane; the others still do', async () => {
    const { rt, q, log, make } = virtual();
    const es = ['head', 'mid', 'x', 'tail'].map((n) => make(n));
    for (const e of es) q.add(e, 30, rt.now());
    q.remove(es[0]!);
    q.remove(es[1]!);
    q.remove(es[3]!);
    q.remove(es[3]!); // twice is a no-op
    await rt.advance(80);
    expect(log).toEqual([{ name: 'x', at: 30 }]);
    expect(es.every((e) => e.lane === undefined)).toBe(true);
  });

  test('budgets keep their own lanes: a short one added after a long one expires first', async () => {
    const { rt, q, log, make } = virtual();
    q.add(make('long'), 60, rt.now());
    q.add(make('short'), 10, rt.now());
    await rt.advance(120);
    expect(log).toEqual([
      { name: 'short', at: 10 },
      { name: 'long', at: 60 },
    ]);
  });

  test('an entry added while its lane expires others (by what an expiry set off) still expires, once', async () => {
    const { rt, q, log, make } = virtual();
    q.add(
      make('first', () => q.add(make('added'), 20, rt.now())),
      20,
      rt.now(),
    );
    await rt.advance(120);
    expect(log).toEqual([
      { name: 'first', at: 20 },
      { name: 'added', at: 40 },
    ]);
  });

  test('lanes of budgets that vary call to call do not pile up: each goes once its entries have', async () => {
    const { rt, q, log, make } = virtual();
    const kept: Deadline[] = [];
    for (let ms = 1; ms <= 200; ms++) {
      const e = make(String(ms));
      q.add(e, ms / 10, rt.now());
      if (ms % 2 === 0) q.remove(e);
      else kept.push(e);
    }
    expect(lanesOf(q).size).toBe(20); // ceil(ms / 10): 1..20
    await rt.advance(100);
    expect(log).toHaveLength(kept.length);
    expect(lanesOf(q).size).toBe(0);
    expect(rt.pending).toBe(0);
  });

  test('on the real timers (the default): an entry expires, never before its deadline', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    const started = realNow();
    await new Promise<void>((resolve) => q.add(entry(log, 'real', resolve), 40, started));
    // A timer may fire up to 1 ms early on the loop's clock; how late is the machine's business.
    expect(log[0]!.at - started).toBeGreaterThanOrEqual(39);
  });

  test('the last entry out of a lane unrefs its timer: nothing keeps the process alive after it; a new entry refs it again', () => {
    const q = new DeadlineQueue();
    // Ref'd timers only: an unref'd one is not an active resource.
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const a = entry([], 'a');
    const b = entry([], 'b');
    q.add(a, 5_000, realNow());
    q.add(b, 5_000, realNow());
    expect(timers()).toBe(before + 1); // one timer for the lane, not one per entry
    q.remove(a);
    expect(timers()).toBe(before + 1); // b still needs it
    q.remove(b);
    expect(timers()).toBe(before);
    expect(lanesOf(q).size).toBe(1); // idle, until its timer fires
    const c = entry([], 'c');
    q.add(c, 5_000, realNow());
    expect(timers()).toBe(before + 1);
    q.remove(c);
    expect(timers()).toBe(before);
  });

  test('commands that settle one at a time arm one timer per budget, not one each; the idle lane goes when it fires', async () => {
    const rt = virtualRuntime();
    let armed = 0;
    const q = new DeadlineQueue({ now: rt.now, timer: (fn, ms) => (armed++, rt.timer(fn, ms)) });
    const log: { name: string; at: number }[] = [];
    for (let i = 0; i < 100; i++) {
      const e = entry(log, String(i), undefined, rt.now);
      q.add(e, 50, rt.now());
      await rt.advance(1); // its reply, a millisecond later
      q.remove(e);
    }
    // The lane's timer fired at 50 and 100 ms and re-armed for the entry then newest; a timer each was 100.
    expect(armed).toBeLessThanOrEqual(3);
    expect(rt.pending).toBe(0); // the idle lane's timer holds nothing alive
    await rt.advance(100);
    expect(log).toEqual([]);
    expect(lanesOf(q).size).toBe(0);
  });

  test('only a few lanes idle at once: budgets that vary call to call drop their lane when it empties', async () => {
    const { rt, q, make } = virtual();
    for (let ms = 1; ms <= 100; ms++) {
      const e = make(String(ms));
      q.add(e, ms, rt.now());
      q.remove(e);
    }
    expect(lanesOf(q).size).toBe(8);
    await rt.advance(100);
    expect(lanesOf(q).size).toBe(0);
  });

  test('a budget that is not finite never expires and holds no lane', async () => {
    const { rt, q, log, make } = virtual();
    const e = make('never');
    q.add(e, Infinity, rt.now());
    expect(e.lane).toBeUndefined();
    expect(lanesOf(q).size).toBe(0);
    expect(rt.pending).toBe(0);
    await rt.advance(1e9);
    expect(log).toEqual([]);
  });
});
