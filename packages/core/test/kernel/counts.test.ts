import { Counts } from '../../src/kernel/counts';

test("Counts: a busy key's entry is kept at 0 between uses, and those at 0 go once they outnumber those above it", () => {
  const counts = new Counts();
  for (let i = 0; i < 10_000; i++) counts.add(`other:${i}`, 1);
  const map = (counts as unknown as { counts: Map<string, number> }).counts;
  const deletes = jest.spyOn(map, 'delete');
  for (let i = 0; i < 2_000; i++) {
    const key = i % 2 === 0 ? 'a' : 'b';
    expect(counts.get(key)).toBe(0);
    counts.add(key, 1.5);
    expect(counts.get(key)).toBe(1.5);
    counts.take(key, 1.5);
  }
  // Deleting at 0 was one per use: 2,000.
  expect(deletes.mock.calls.length).toBe(0);
  expect(counts.size).toBe(10_000);
  // Taking more than is there counts 0, and taking from a key with none does nothing.
  counts.add('c', 1);
  counts.take('c', 5);
  counts.take('c', 1);
  counts.take('never', 1);
  expect(counts.get('c')).toBe(0);
  expect(counts.size).toBe(10_000);
  for (let i = 0; i < 10_000; i++) counts.take(`other:${i}`, 1);
  expect(counts.size).toBe(0);
  // Bounded: no more at 0 than above 0, plus 64.
  expect(map.size).toBeLessThanOrEqual(64);
  deletes.mockRestore();
});
