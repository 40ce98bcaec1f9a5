import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Counts } from '../../src/kernel/counts';

test("Counts: a busy key's entry is kept at 0 between uses, and those at 0 go once they outnumber those above it", () => {
  const counts = new Counts();
  for (let i = 0; i < 10_000; i++) counts.add(`other:${i}`, 1);
  const live = () => (counts as unknown as { counts: Map<string, number> }).counts;
  const map = live();
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
  expect(live()).toBe(map);
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
  expect(live().size).toBeLessThanOrEqual(64);
  deletes.mockRestore();
});

/*
 * A Map that deletes and sets over and over rehashes into new tables, each old one pointing to the next. Once
 * a table outlived two young collections (an idle moment is enough) and was replaced, that old-generation
 * table kept every later one alive through each young collection until a full one: the count of a busy server
 * promoted about 18 bytes a use into the old generation on Node.js 20, and full collections followed.
 * Measured in a child process, as the old space's growth across each young collection (v8.GCProfiler, as
 * test/fixtures/promotion-worker.ts does: a scavenge, or a minor mark-sweep on the lines that run one).
 */
test('Counts: its sweeps leave nothing for the old generation to collect, even after an idle moment', () => {
  const uses = 1_000_000;
  const script = `
    const { GCProfiler } = require('node:v8');
    const { Counts } = require(${JSON.stringify(join(__dirname, '../../src/kernel/counts.ts'))});
    const counts = new Counts();
    const inFlight = [];
    let garbage = [];
    const profiler = new GCProfiler();
    profiler.start();
    for (let i = 0; i < ${uses}; i++) {
      // An idle moment: the table in use outlives two young collections.
      if (i === 1000) { gc({ type: 'minor' }); gc({ type: 'minor' }); }
      const key = 'client:' + ((i * 7919) % 10000);
      counts.add(key, 1);
      inFlight.push(key);
      if (inFlight.length > 20) counts.take(inFlight.shift(), 1);
      // What a request leaves for the young collector, so that young collections come.
      garbage.push({ i, s: 'x' + i });
      if (garbage.length > 100) garbage = [];
    }
    const oldSpace = (spaces) => spaces.find((s) => s.spaceName === 'old_space').spaceUsedSize;
    let young = 0, promoted = 0, full = 0;
    for (const c of profiler.stop().statistics) {
      if (c.gcType === 'Scavenge' || c.gcType === 'MinorMarkSweep') {
        young++;
        promoted += oldSpace(c.afterGC.heapSpaceStatistics) - oldSpace(c.beforeGC.heapSpaceStatistics);
      } else if (c.gcType === 'MarkSweepCompact') full++;
    }
    process.stdout.write(JSON.stringify({ young, promoted, full }));`;
  const out = execFileSync(process.execPath, ['--expose-gc', '-r', join(__dirname, '../../../../test/ts-register.cjs'), '-e', script], {
    encoding: 'utf8',
  });
  const { young, promoted, full } = JSON.parse(out) as { young: number; promoted: number; full: number };
  expect(young).toBeGreaterThan(10);
  // Before: 18 bytes a use on Node.js 20. What is left (about 2) is the loop's own: its in-flight list and garbage.
  expect(promoted / uses).toBeLessThan(6);
  expect(full).toBe(0);
});
