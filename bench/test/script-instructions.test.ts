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

test('BENCH_COUNT=instructions counts what redis-server executes per check, for 3 x 2 step by step, for 1 x 1 and for the ideal script', () => {
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
  // The least a sliding-window check can cost (lib/ideal-sliding-window.ts): more than its fixed part, less
  // than Floodgate's check of the same rules, each ratio read from its own figures.
  const ideal = /3 x 2 ([\d.,]+), 1 x 1 ([\d.,]+); 3 x 2 \/ 1 x 1 ([\d.]+)x, 1 x 1 \/ floor ([\d.]+)x\.$/m.exec(r.stdout);
  expect(ideal).not.toBeNull();
  const [idealThree, idealOne, idealRatio, idealOverFloor] = ideal!.slice(1).map((v) => Number(v.replace(/,/g, ''))) as [
    number,
    number,
    number,
    number,
  ];
  expect(idealOne).toBeGreaterThan(oneFixed);
  expect(idealOne).toBeLessThan(one);
  expect(idealThree).toBeGreaterThan(idealOne);
  expect(idealThree).toBeLessThan(full);
  expect(idealRatio).toBeCloseTo(idealThree / idealOne, 1);
  expect(idealOverFloor).toBeCloseTo(idealOne / floor, 1);
}, 240_000);

test('BENCH_COUNT takes time or instructions, and names what it got', () => {
  const r = bench({ BENCH_COUNT: 'cycles' });
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain('BENCH_COUNT is time or instructions; got cycles');
}, 120_000);
