import { OldestKey, RoundRobin } from '../../src/kernel/insertion-order';

/** A seeded generator, so that a failure replays. */
function seeded(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
}

test('OldestKey: always the first key in insertion order, through inserts, moves, deletes anywhere, clears and compactions', () => {
  const rand = seeded(11);
  const map = new Map<string, number>();
  const oldest = new OldestKey(map);
  let next = 0;
  const some = (): string | undefined => {
    const keys = [...map.keys()];
    return keys[rand(keys.length)];
  };
  // Enough churn at a bound of 200 keys for V8 to compact the table many times under the cursor.
  for (let step = 0; step < 30_000; step++) {
    const op = rand(20);
    if (op < 8) map.set(`k${next++}`, step);
    else if (op < 12) {
      // Used again: least recently used order moves it to the end.
      const k = some();
      if (k !== undefined) {
        map.delete(k);
        map.set(k, step);
      }
    } else if (op < 14) {
      const k = some();
      if (k !== undefined) map.delete(k);
    } else if (op === 14 && rand(50) === 0) map.clear();
    while (map.size > 200) {
      const expected = map.keys().next().value;
      const taken = oldest.take();
      expect(taken).toBe(expected);
      map.delete(taken!);
    }
  }
  map.clear();
  expect(oldest.take()).toBeUndefined();
  map.set('after', 1);
  expect(oldest.take()).toBe('after');
});

test('RoundRobin: every key once per round whatever moves, keys added join the round, and skipped keys are passed over', () => {
  const map = new Map<string, number>(['a', 'b', 'c', 'd'].map((k, i) => [k, i]));
  const round = new RoundRobin(map);
  expect([1, 2, 3, 4].map(() => round.next())).toEqual(['a', 'b', 'c', 'd']);
  // 'a' used again (moved to the end), 'e' added, 'c' deleted: the next round sees each key left once.
  map.delete('a');
  map.set('a', 0);
  map.set('e', 4);
  map.delete('c');
  const seen = [1, 2, 3, 4].map(() => round.next());
  expect([...seen].sort()).toEqual(['a', 'b', 'd', 'e']);
  // A key just written is passed over, and only it.
  expect([1, 2, 3].map(() => round.next((k) => k === 'b'))).not.toContain('b');
  // Nothing but keys to pass over: undefined, not a loop.
  expect(round.next(() => true)).toBeUndefined();
  map.clear();
  expect(round.next()).toBeUndefined();
});
