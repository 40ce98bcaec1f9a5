import { DeadlineQueue, type Deadline } from '../../src/kernel/deadlines';
import { realNow } from '../../src/kernel/real-timers';

/** An entry that records when (realNow()) it expired. */
function entry(log: { name: string; at: number }[], name: string, onExpire?: () => void): Deadline {
  return {
    at: 0,
    lane: undefined,
    prev: undefined,
    next: undefined,
    expire() {
      log.push({ name, at: realNow() });
      onExpire?.();
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const lanesOf = (q: DeadlineQueue): Map<number, unknown> => (q as unknown as { lanes: Map<number, unknown> }).lanes;

describe('DeadlineQueue: many deadlines on one timer per budget', () => {
  test('entries of one budget expire in order, none before its deadline, each soon after it', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    const started: Record<string, number> = {};
    for (const name of ['a', 'b', 'c']) {
      const now = realNow();
      started[name] = now;
      q.add(entry(log, name), 40, now);
      await sleep(15);
    }
    await sleep(300);
    expect(log.map((e) => e.name)).toEqual(['a', 'b', 'c']);
    for (const { name, at } of log) {
      const waited = at - started[name]!;
      expect(waited).toBeGreaterThanOrEqual(39); // a timer may fire up to 1 ms early on the loop's clock
      expect(waited).toBeLessThan(40 + 200); // generous for a loaded machine
    }
  });

  test('a removed entry never expires, wherever it was in its lane; the others still do', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    const now = realNow();
    const es = ['head', 'mid', 'x', 'tail'].map((n) => entry(log, n));
    for (const e of es) q.add(e, 30, now);
    q.remove(es[0]!);
    q.remove(es[1]!);
    q.remove(es[3]!);
    q.remove(es[3]!); // twice is a no-op
    await sleep(80);
    expect(log.map((e) => e.name)).toEqual(['x']);
    expect(es.every((e) => e.lane === undefined)).toBe(true);
  });

  test('budgets keep their own lanes: a short one added after a long one expires first', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    q.add(entry(log, 'long'), 60, realNow());
    q.add(entry(log, 'short'), 10, realNow());
    await sleep(120);
    expect(log.map((e) => e.name)).toEqual(['short', 'long']);
  });

  test('an entry added while its lane expires others (by what an expiry set off) still expires, once', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    q.add(
      entry(log, 'first', () => q.add(entry(log, 'added'), 20, realNow())),
      20,
      realNow(),
    );
    await sleep(120);
    expect(log.map((e) => e.name)).toEqual(['first', 'added']);
  });

  test('a lane left empty is dropped: budgets that vary call to call do not pile up', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    const kept: Deadline[] = [];
    for (let ms = 1; ms <= 200; ms++) {
      const e = entry(log, String(ms));
      q.add(e, ms / 10, realNow());
      if (ms % 2 === 0) q.remove(e);
      else kept.push(e);
    }
    expect(lanesOf(q).size).toBe(20); // ceil(ms / 10): 1..20
    await sleep(100);
    expect(log).toHaveLength(kept.length);
    expect(lanesOf(q).size).toBe(0);
  });

  test('the last entry out of a lane takes its timer with it: nothing keeps the process alive after it', () => {
    const q = new DeadlineQueue();
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
    expect(lanesOf(q).size).toBe(0);
  });

  test('a budget that is not finite never expires and holds no lane', async () => {
    const q = new DeadlineQueue();
    const log: { name: string; at: number }[] = [];
    const e = entry(log, 'never');
    q.add(e, Infinity, realNow());
    expect(e.lane).toBeUndefined();
    expect(lanesOf(q).size).toBe(0);
    await sleep(20);
    expect(log).toEqual([]);
  });
});
