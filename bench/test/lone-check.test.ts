import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startBenchRedis } from '../src/lib/machine';

/*
 * The scripts behind bench/results/lone-check.md and ab/deadline-idle.md, each in a short run: lone-check.mjs
 * on this checkout's build and on the floor's script, lone-ab.mjs with this build on both sides, reply-decode.mjs,
 * and perf-diff.mjs on two reports of known samples.
 */
const root = join(__dirname, '..', '..');
const script = (name: string): string => join(__dirname, '..', 'scripts', name);
const run = (args: string[], env: Record<string, string> = {}) =>
  promisify(execFile)(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, timeout: 60_000 });

test.each([
  ['a check of this build', root],
  ["the floor's script call", '--floor'],
])(
  'lone-check reports the CPU and wall time of %s that runs alone',
  async (_what, arg) => {
    const redis = await startBenchRedis();
    try {
      const { stdout } = await run([script('lone-check.mjs'), arg], { REDIS_URL: redis.url, LONE_WARM_MS: '200', LONE_MEASURE_MS: '300' });
      const m = /: µs per lone check: CPU ([\d.]+), wall ([\d.]+) \((\d+) checks\)/.exec(stdout);
      expect(m).not.toBeNull();
      expect(Number(m![1])).toBeGreaterThan(0);
      expect(Number(m![2])).toBeGreaterThan(0);
      expect(Number(m![3])).toBeGreaterThan(0);
      // What ran is what was asked for: the floor's counters, or the limiter's state.
      const keys = redis.cli('--scan', '--pattern', arg === '--floor' ? 'bench-lone:floor:*' : 'bench-lone:lone-check-*');
      expect(keys.split('\n').filter((k) => k !== '').length).toBeGreaterThan(0);
    } finally {
      await redis.stop();
    }
  },
  90_000,
);

test("lone-ab runs two builds' lone checks, each on its own Redis, and reports both sides' CPU", async () => {
  const [a, b] = await Promise.all([startBenchRedis(), startBenchRedis()]);
  try {
    const { stdout } = await run([script('lone-ab.mjs'), '.', root], {
      REDIS_A_URL: a.url,
      REDIS_B_URL: b.url,
      LONE_AB_BLOCK: '50',
      LONE_AB_ROUNDS: '4',
    });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(/: µs per lone check: CPU [\d.]+, Redis [\d.]+ \(200 checks\)$/);
    // Each side checked against its own server.
    for (const r of [a, b]) expect(Number(/keys=(\d+)/.exec(r.cli('INFO', 'keyspace'))?.[1])).toBeGreaterThan(0);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}, 90_000);

test('reply-decode decodes each reply shape exactly and reports ns per reply', async () => {
  const { stdout } = await run([script('reply-decode.mjs')], { REPLY_DECODE_N: '1000' });
  expect(stdout).toMatch(/^floor \(count, TTL\): 2 items, 17 bytes, \d+ ns per reply$/m);
  expect(stdout).toMatch(/^Floodgate 1 x 1: 8 items, \d+ bytes, \d+ ns per reply$/m);
  expect(stdout).toMatch(/^Floodgate 3 x 2: 25 items, \d+ bytes, \d+ ns per reply$/m);
});

test('perf-diff turns two perf reports into µs per unit of work per symbol, largest difference first', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'perf-diff-'));
  const report = (rows: [number, string][]): string =>
    `# Samples: 1K of event 'cpu-clock'\n#\n# Overhead       Samples  Symbol\n${rows.map(([n, s]) => `    10.00%  ${n}  ${s}`).join('\n')}\n`;
  writeFileSync(
    join(dir, 'a.txt'),
    report([
      [500, '[.] JS:*decode /x/node_modules/ioredis/built/resp/decoder.js:1:1'],
      [100, '[k] do_syscall_64'],
    ]),
  );
  writeFileSync(
    join(dir, 'b.txt'),
    report([
      [100, '[.] JS:^decode /y/node_modules/ioredis/built/resp/decoder.js:1:1'],
      [100, '[k] do_syscall_64'],
    ]),
  );
  // 5,000 Hz: a sample is 200 µs. A: 500 and 100 samples over 1,000 units; B: 100 and 100 over 200 units.
  const { stdout } = await run([script('perf-diff.mjs'), join(dir, 'a.txt'), '1000', join(dir, 'b.txt'), '200']);
  const lines = stdout.trim().split('\n');
  expect(lines[0]).toBe('total: 120.00 against 200.00 µs per unit (A - B: -80.00)');
  expect(lines[2]).toBe('100.000  100.000  +0.000  JS:decode ioredis/built/resp/decoder.js:1:1');
  expect(lines[3]).toBe('20.000  100.000  -80.000  do_syscall_64');
});
