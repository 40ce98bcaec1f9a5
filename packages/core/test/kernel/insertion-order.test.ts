import { OldestKey, RoundRobin, UseOrder } from '../../src/kernel/insertion-order';

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

test('UseOrder: an entry used within the last size / 2 - 1 puts is never the oldest, and a busy key moves about once per size / 2 puts', () => {
  const rand = seeded(5);
  const max = 400;
  const map = new Map<string, { placed: number }>();
  const order = new UseOrder();
  const oldest = new OldestKey(map);
  const moves = jest.spyOn(map, 'delete');
  let puts = 0;
  let next = 0;
  const lastUse = new Map<string, number>();
  const use = (key: string): void => {
    const entry = map.get(key);
    if (entry === undefined) order.set(map, key, { placed: 0 });
    else if (rand(2) === 0) order.used(map, key, entry);
    else order.set(map, key, { placed: 0 });
    lastUse.set(key, ++puts);
    while (map.size > max) {
      const victim = oldest.take()!;
      expect(puts - lastUse.get(victim)!).toBeGreaterThanOrEqual(max / 2 - 1);
      map.delete(victim);
    }
  };
  for (let step = 0; step < 40_000; step++) {
    const op = rand(10);
    if (op < 4) use(`new${next++}`);
    else if (op < 8) use(`busy${rand(4)}`);
    else {
      const keys = [...map.keys()];
      use(keys[rand(keys.length)]!);
    }
  }
  // About 16,000 uses of four busy keys: each moved about once per max / 2 puts (40,000 puts / 200 = 200
  // times each at most), where moving at every use would be 16,000 moves.
  const busyMoves = moves.mock.calls.filter(([key]) => key.startsWith('busy')).length;
  expect(busyMoves).toBeGreaterThan(0);
  expect(busyMoves).toBeLessThanOrEqual(4 * (40_000 / (max / 2)));
});
