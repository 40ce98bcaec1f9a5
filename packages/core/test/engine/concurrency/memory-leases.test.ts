import { MemoryLeases } from '../../../src/engine/concurrency/memory-leases';

test("a busy identifier's set is not deleted at each release and set again at its next lease; sets that count for nothing go", () => {
  // Deleting it at every release left its slot in the Map's hash chain until V8 compacted the table: with
  // 10,000 other identifiers holding leases, each lease walked the busy set's past copies (tens of µs per
  // lease). Deletes are counted here, not timed.
  const leases = new MemoryLeases(100_000);
  let now = 1_000;
  for (let i = 0; i < 10_000; i++) expect(leases.acquire([`other:${i}`], `l${i}`, 5, 60_000, now)[0]).toBe(1);
  const sets = (leases as unknown as { sets: Map<string, unknown> }).sets;
  const deletes = jest.spyOn(sets, 'delete');
  for (let i = 0; i < 2_000; i++) {
    const key = i % 2 === 0 ? 'busy:a' : 'busy:b';
    expect(leases.acquire([key], `b${i}`, 1, 60_000, now)[0]).toBe(1);
    // max 1: the busy identifier's next lease waits for this one's release.
    expect(leases.acquire([key], `x${i}`, 1, 60_000, now)[0]).toBe(0);
    expect(leases.release([key], `b${i}`, now)).toBe(1);
    expect(leases.read(key, now)).toBeUndefined();
  }
  expect(deletes.mock.calls.length).toBe(0);
  deletes.mockRestore();
  // Once the others' leases expire, the writes' cleanup drops their sets (and the busy ones'), one a write.
  now += 60_001;
  for (let i = 0; i < 30_000; i++) {
    const key = `late:${i % 10}`;
    leases.acquire([key], `z${i}`, 100_000, 1, now);
    leases.release([key], `z${i}`, now);
  }
  expect(leases.size).toBeLessThan(1_000);
});
