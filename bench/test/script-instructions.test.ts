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

/** Numbers as the tables print them (thousands separators, a ratio's 'x'); a text that is no number reads NaN, which fails every expectation. */
const numbers = (texts: readonly string[]): number[] => texts.map((t) => Number(t.replace(/[x,]/g, '')));

test('BENCH_COUNT=instructions counts what redis-server executes per check, for 3 x 2 step by step, for 1 x 1 and for the hand-written twins', () => {
  const r = bench({ BENCH_COUNT: 'instructions', BENCH_ALGOS: 'sliding-window', BENCH_REPS: '1', BENCH_CALLS: '200' });
  expect(r.stderr).not.toMatch(/Error/);
  expect(r.status).toBe(0);
  expect(r.stdout).toContain('thousands of instructions redis-server executes per check');
  const row = r.stdout.split('\n').find((l) => l.startsWith('| sliding-window |'));
  expect(row).toBeDefined();
  // call, + TIME, ..., full, the 1 x 1's fixed part and whole, the ratios, then the state's bytes with 3 rules
  // and with 1: each 3 x 2 column adds to the one before.
  const cells = numbers(
    row!
      .split('|')
      .slice(2, -1)
      .map((c) => c.trim().split(' ')[0]!),
  );
  const columns = [
    'call',
    'time',
    'blocks',
    'reads',
    'peek',
    'encode',
    'full',
    'oneFixed',
    'one',
    'ratio',
    'overFloor',
    'bytesThree',
    'bytesOne',
  ] as const;
  const { call, time, blocks, reads, full, oneFixed, one, ratio, overFloor, bytesThree, bytesOne } = Object.fromEntries(
    columns.map((name, i) => [name, cells[i] ?? NaN]),
  ) as Record<(typeof columns)[number], number>;
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
  // What an identifier's state takes in Redis (MEMORY USAGE of its key): more with 3 rules than with 1, and
  // at least the key's own overhead.
  expect(bytesOne).toBeGreaterThan(50);
  expect(bytesThree).toBeGreaterThan(bytesOne);
  // The hand-written twins, each line read with its own figures: the least a sliding-window check can cost
  // (lib/ideal-sliding-window.ts), more than its fixed part and less than Floodgate's check of the same rules,
  // and Floodgate's ring on a packed layout (lib/ring-sliding-window.ts), between the two.
  const twin = (opening: string): { three: number; single: number; bytesThree: number } => {
    const line = r.stdout.split('\n').find((l) => l.startsWith(opening));
    expect([opening, line]).toEqual([opening, expect.any(String)]);
    const m =
      /3 x 2 ([\d.,]+), 1 x 1 ([\d.,]+); 3 x 2 \/ 1 x 1 ([\d.]+)x, 1 x 1 \/ floor ([\d.]+)x; state per identifier ([\d,]+) B with 3 rules, ([\d,]+) B with 1\.$/.exec(
        line!,
      );
    expect(m).not.toBeNull();
    const v = numbers(m!.slice(1));
    const at = (i: number): number => v[i] ?? NaN;
    expect(at(2)).toBeCloseTo(at(0) / at(1), 1);
    expect(at(3)).toBeCloseTo(at(1) / floor, 1);
    expect(at(5)).toBeGreaterThan(50);
    expect(at(4)).toBeGreaterThan(at(5));
    return { three: at(0), single: at(1), bytesThree: at(4) };
  };
  const ideal = twin('The least a sliding-window check decided in Redis costs');
  expect(ideal.single).toBeGreaterThan(oneFixed);
  expect(ideal.single).toBeLessThan(one);
  expect(ideal.three).toBeGreaterThan(ideal.single);
  expect(ideal.three).toBeLessThan(full);
  const ring = twin("Floodgate's ring of buckets on such a layout");
  expect(ring.single).toBeGreaterThan(ideal.single);
  expect(ring.three).toBeGreaterThan(ideal.three);
  expect(ring.three).toBeLessThan(full);
  // Its doubles take more memory than the generated script's MessagePack ring of small counts.
  expect(ring.bytesThree).toBeGreaterThan(bytesThree);
}, 240_000);

test('BENCH_COUNT takes time or instructions, and names what it got', () => {
  const r = bench({ BENCH_COUNT: 'cycles' });
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain('BENCH_COUNT is time or instructions; got cycles');
}, 120_000);
