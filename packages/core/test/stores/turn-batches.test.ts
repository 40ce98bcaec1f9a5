import { realRuntime, type Runtime } from '../../src/kernel/runtime';
import { BATCH_MAX, TurnBatches, WHOLE_MAX } from '../../src/stores/turn-batches';

/*
 * When a turn's batches leave (stores/turn-batches.ts): as soon as one holds BATCH_MAX items, else at the end
 * of the turn; in a turn asked to keep them whole (keepWhole()), at the end of the turn or at WHOLE_MAX items;
 * and an item that finds the store idle (no call in flight, no batch of its own open) at once, alone.
 * The end of the turn is the test's to call: its runtime's afterTurn only queues the callback. A call is in
 * flight until the test answers it (its dispatch's promise settles).
 */

interface Kind {
  readonly name: string;
}

/** `busy` (the default): one call of another kind is in flight and never answered, so every item waits for its batch. */
function turns({ busy = true }: { busy?: boolean } = {}) {
  let ends: (() => void)[] = [];
  const runtime: Runtime = { ...realRuntime, afterTurn: (fn) => void ends.push(fn) };
  const sent: { kind: string; items: number[] }[] = [];
  const calls: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const batches = new TurnBatches<Kind, number>(runtime, (kind, batch) => {
    sent.push({ kind: kind.name, items: [...batch.items] });
    return new Promise<void>((resolve, reject) => calls.push({ resolve, reject }));
  });
  if (busy) {
    batches.add({ name: 'in flight' }, -1, -1, Infinity);
    sent.length = 0;
  }
  let next = 0;
  return {
    batches,
    sent,
    calls,
    /** Queues `n` items of `kind` in `slot`, numbered on from the last. */
    add(kind: Kind, n: number, slot = -1): void {
      for (let i = 0; i < n; i++) batches.add(kind, slot, next++, Infinity);
    },
    /** The end of the turn: what afterTurn queued runs. */
    endTurn(): void {
      const due = ends;
      ends = [];
      for (const fn of due) fn();
    },
    get scheduled(): number {
      return ends.length;
    },
  };
}

/** The sizes batches of `n` items take, `max` at most each. */
const sizes = (n: number, max: number): number[] => [
  ...Array.from({ length: Math.floor(n / max) }, () => max),
  ...(n % max === 0 ? [] : [n % max]),
];
const sizesOf = (sent: { items: number[] }[]): number[] => sent.map((b) => b.items.length);

const a: Kind = { name: 'a' };
const b: Kind = { name: 'b' };

test('a turn splits its batches at BATCH_MAX: the full ones leave at once, the rest at the end of the turn', () => {
  const t = turns();
  t.add(a, 100);
  expect(sizesOf(t.sent)).toEqual(sizes(100, BATCH_MAX).slice(0, Math.floor(100 / BATCH_MAX)));
  t.endTurn();
  expect(sizesOf(t.sent)).toEqual(sizes(100, BATCH_MAX));
  expect(t.sent.flatMap((s) => s.items)).toEqual(Array.from({ length: 100 }, (_, i) => i));
});

test('a turn kept whole sends its batch at its end, whole and in order; the next turn splits at BATCH_MAX again', () => {
  const t = turns();
  t.batches.keepWhole();
  t.add(a, 100);
  expect(t.sent).toEqual([]);
  t.endTurn();
  expect(t.sent).toEqual([{ kind: 'a', items: Array.from({ length: 100 }, (_, i) => i) }]);
  // The next turn, not asked: split as before.
  t.sent.length = 0;
  t.add(a, 100);
  t.endTurn();
  expect(sizesOf(t.sent)).toEqual(sizes(100, BATCH_MAX));
});

test('asked in the middle of a turn, the open batch grows on: one batch for the whole turn', () => {
  const t = turns();
  const before = Math.min(BATCH_MAX - 1, 50);
  t.add(a, before);
  t.batches.keepWhole();
  t.add(a, 100 - before);
  t.endTurn();
  expect(sizesOf(t.sent)).toEqual([100]);
});

test('a kept-whole batch still leaves at WHOLE_MAX (1,000) items: 2,500 items are three calls', () => {
  expect(WHOLE_MAX).toBe(1_000);
  const t = turns();
  t.batches.keepWhole();
  t.add(a, 2_500);
  // The full ones left as they filled, before the end of the turn.
  expect(sizesOf(t.sent)).toEqual([1_000, 1_000]);
  t.endTurn();
  expect(sizesOf(t.sent)).toEqual([1_000, 1_000, 500]);
  expect(t.sent.flatMap((s) => s.items)).toEqual(Array.from({ length: 2_500 }, (_, i) => i));
});

test('kept whole applies to every kind and slot of the turn, each its own batch', () => {
  const t = turns();
  t.batches.keepWhole();
  t.add(a, 40, 1);
  t.add(a, 30, 2);
  t.add(b, 20, 1);
  t.endTurn();
  expect(t.sent.map((s) => [s.kind, s.items.length])).toEqual([
    ['a', 40],
    ['a', 30],
    ['b', 20],
  ]);
});

test('asked in a turn that opens no batch, the ask still ends with the turn', () => {
  const t = turns();
  t.batches.keepWhole();
  t.batches.keepWhole();
  // One end of turn to wait for (not one per ask), which clears the ask though no batch opened.
  expect(t.scheduled).toBe(BATCH_MAX === WHOLE_MAX ? 0 : 1);
  t.endTurn();
  t.add(a, 100);
  t.endTurn();
  expect(sizesOf(t.sent)).toEqual(sizes(100, BATCH_MAX));
});

describe('an idle store', () => {
  /** Lets the promise callbacks of the calls answered so far run. */
  const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  test('sends an item at once, alone, when nothing is in flight; the rest of the turn waits for its batch', () => {
    const t = turns({ busy: false });
    t.add(a, 1);
    expect(t.sent).toEqual([{ kind: 'a', items: [0] }]);
    expect(t.scheduled).toBe(0);
    t.add(a, 20);
    // In flight now: the next items batch as on a busy store (a full one at once, the rest at the end of the turn).
    expect(sizesOf(t.sent)).toEqual([1, ...sizes(20, BATCH_MAX).slice(0, Math.floor(20 / BATCH_MAX))]);
    t.endTurn();
    expect(sizesOf(t.sent)).toEqual([1, ...sizes(20, BATCH_MAX)]);
    expect(t.sent.flatMap((x) => x.items)).toEqual(Array.from({ length: 21 }, (_, i) => i));
  });

  test('is idle again once every call is answered, or has failed', async () => {
    const t = turns({ busy: false });
    t.add(a, 1);
    t.add(b, 2);
    t.endTurn();
    expect(sizesOf(t.sent)).toEqual([1, 2]);
    // One of the two calls answered: still one in flight, so the next item waits.
    t.calls[0]!.resolve();
    await settled();
    t.add(a, 1);
    expect(sizesOf(t.sent)).toEqual([1, 2]);
    t.endTurn();
    expect(sizesOf(t.sent)).toEqual([1, 2, 1]);
    // The others fail: a failed call is not in flight either.
    t.calls[1]!.reject(new Error('ERR down'));
    t.calls[2]!.reject(new Error('ERR down'));
    await settled();
    t.add(b, 1);
    expect(sizesOf(t.sent)).toEqual([1, 2, 1, 1]);
    expect(t.scheduled).toBe(0);
  });

  test('keeps a turn asked to stay whole whole: nothing leaves before the end of the turn', () => {
    const t = turns({ busy: false });
    t.batches.keepWhole();
    t.add(a, 100);
    expect(t.sent).toEqual([]);
    t.endTurn();
    expect(sizesOf(t.sent)).toEqual([100]);
  });
});
