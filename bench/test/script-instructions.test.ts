import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/*
 * `BENCH_COUNT=instructions npm run bench:script-cost` (docs/performance.md): redis-server under valgrind's
 * callgrind, instructions per check. A short run of one algorithm (it leaves bench/results alone: only a
 * run of every algorithm writes there).
 */
const bench = (env: Record<string, string>): { status: number | null; stdout: string; stderr: string } =>
  spawnSync('npm', ['run', 'bench:script-cost'], {
    cwd: join(__dirname, '..', '..'),
    encoding: 'utf8',
    env: { ...process.env, FORCE_COLOR: '0', ...env },
  });

test('BENCH_COUNT=instructions counts what redis-server executes per check, for 3 x 2 step by step, for 1 x 1 and for the hand-written twins', () => {
  const r = bench({ BENCH_COUNT: 'instructions', BENCH_ALGOS: 'sliding-window', BENCH_REPS: '1', BENCH_CALLS: '200' });
  expect(r.stderr).not.toMatch(/Error/);
  expect(r.status).toBe(0);
  expect(r.stdout).toContain('thousands of instructions redis-server executes per check');
  const row = r.stdout.split('\n').find((l) => l.startsWith('| sliding-window |'));
  expect(row).toBeDefined();
  // call, + TIME, ..., full, the 1 x 1's fixed part and whole, then the ratios: each 3 x 2 column adds to
  // the one before.
  const cells = row!
    .split('|')
    .slice(2, -1)
    .map((c) => Number(c.trim().split(' ')[0]!.replace(/[x,]/g, '')));
  const [call, time, blocks, reads, , , full, oneFixed, one, ratio, overFloor] = cells as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const floor = Number(/the cheapest check a peer sends .*: ([\d.,]+)\.$/m.exec(r.stdout)?.[1]?.replace(/,/g, ''));
  expect(call).toBeGreaterThan(1); // thousands: an EVALSHA of 20-odd arguments is tens of thousands
  expect(time).toBeGreaterThan(call);
  expect(blocks).toBeGreaterThan(time);
  expect(reads).toBeGreaterThan(blocks);
  expect(full).toBeGreaterThan(one);
  expect(one).toBeGreaterThan(oneFixed);
  expect(oneFixed).toBeGreaterThan(0);
  expect(ratio).toBeCloseTo(full / one, 1);
  // The floor: one peer's script call of a few commands, fewer instructions than the 1 x 1's check.
  expect(floor).toBeGreaterThan(0);
  expect(floor).toBeLessThan(one);
  expect(overFloor).toBeCloseTo(one / floor, 1);
  // The hand-written twins, each line read with its own figures: the least a sliding-window check can cost
  // (lib/ideal-sliding-window.ts), more than its fixed part and less than Floodgate's check of the same rules,
  // and Floodgate's ring on a packed layout (lib/ring-sliding-window.ts), between the two.
  const twin = (opening: string): [number, number, number, number] => {
    const line = r.stdout.split('\n').find((l) => l.startsWith(opening));
    expect([opening, line]).toEqual([opening, expect.any(String)]);
    const m = /3 x 2 ([\d.,]+), 1 x 1 ([\d.,]+); 3 x 2 \/ 1 x 1 ([\d.]+)x, 1 x 1 \/ floor ([\d.]+)x\.$/.exec(line!);
    expect(m).not.toBeNull();
    const [three, single, ratioOf, floorOf] = m!.slice(1).map((v) => Number(v.replace(/,/g, ''))) as [number, number, number, number];
    expect(ratioOf).toBeCloseTo(three / single, 1);
    expect(floorOf).toBeCloseTo(single / floor, 1);
    return [three, single, ratioOf, floorOf];
  };
  const [idealThree, idealOne] = twin('The least a sliding-window check decided in Redis costs');
  expect(idealOne).toBeGreaterThan(oneFixed);
  expect(idealOne).toBeLessThan(one);
  expect(idealThree).toBeGreaterThan(idealOne);
  expect(idealThree).toBeLessThan(full);
  const [ringThree, ringOne] = twin("Floodgate's ring of buckets on such a layout");
  expect(ringOne).toBeGreaterThan(idealOne);
  expect(ringThree).toBeGreaterThan(idealThree);
  expect(ringThree).toBeLessThan(full);
}, 240_000);

test('BENCH_COUNT takes time or instructions, and names what it got', () => {
  const r = bench({ BENCH_COUNT: 'cycles' });
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain('BENCH_COUNT is time or instructions; got cycles');
}, 120_000);
