import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import Redis from 'ioredis';
// The built package, as users run it (`npm run bench:core` builds first).
import { createLimiter, type AlgorithmName, type LimiterOptions } from '@floodgate/core';
import { resolveOptions } from '../../packages/core/src/engine/options';
import { createProgram } from '../../packages/core/src/scripts/compiler';
import { LOAD_CORE, SERVER_CORE, pin, startBenchRedis, type BenchRedis } from './lib/machine';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CORE_LIMITS, PICKED_ALGORITHMS } from './lib/core-rules';
import { envInt, fmt, median } from './lib/stats';
import { thisHost } from './lib/host';
import { capacityTable, coreTable, type CapacityRow, type CoreRow } from './core-table';
import { memoryPerIdentifier } from './lib/memory';
import { leaseRows, leaseTable, type LeaseRow } from './lease';
import { commandLine } from './lib/command-line';

/*
 * `npm run bench:core`: limiter.check() decisions per second, 3 rules x 2 identifiers (ip + user of one
 * of 10,000 clients, chosen at random), at 1, 64 and 256 checks in flight, per algorithm; against the
 * ceiling: redis-benchmark sending the very same script (EVALSHA, same keys and ARGV shape) to the
 * same Redis from the same core. Redis on LOAD_CORE, this process and redis-benchmark on SERVER_CORE.
 * Median of BENCH_REPS (3) runs of BENCH_CORE_SECONDS (2) each.
 */
const CONCURRENCY = [1, 64, 256];
const CLIENTS = 10_000;
const SECONDS = envInt('BENCH_CORE_SECONDS', 2);
const REPS = envInt('BENCH_REPS', 3);
const IDS: [string, string][] = Array.from({ length: CLIENTS }, (_, c) => [`ip:10.0.${c >> 8}.${c & 255}`, `user:u${c}`]);

/** What one run of checks measured: checks per second, and the CPU each check took in this process and in Redis. */
interface Run {
  rate: number;
  nodeUsPerCheck: number;
  redisUsPerCheck: number;
}

/** The two shapes a capacity row takes: 3 rules x 2 identifiers (CORE_LIMITS, IDS) and 1 rule x 1 identifier. */
type ShapeName = '3x2' | '1x1';
const SHAPES: Record<ShapeName, { limits: typeof CORE_LIMITS; ids: (c: number) => string[] }> = {
  '3x2': { limits: CORE_LIMITS, ids: (c) => IDS[c]! },
  '1x1': { limits: [CORE_LIMITS[1]!], ids: (c) => [IDS[c]![1]] },
};

/** Redis's own CPU time so far (INFO cpu, user + sys), in µs. */
const redisCpuUs = (r: BenchRedis): number => {
  const info = r.cli('INFO', 'cpu');
  return (Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1])) * 1e6;
};

async function run(r: BenchRedis, redis: Redis, algorithm: AlgorithmName, concurrency: number, shape: ShapeName = '3x2'): Promise<Run> {
  const { limits, ids } = SHAPES[shape];
  const limiter = createLimiter({ redis, name: `core-${algorithm}-${shape}`, prefix: 'bench', algorithm, limits, timeoutMs: 2_000 });
  const deadline = Date.now() + SECONDS * 1000;
  const maxCalls = SECONDS * 1_000_000; // a bound on the loop whatever the clock does
  let calls = 0;
  let bad = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline && calls < maxCalls) {
      calls++;
      const d = await limiter.check(ids((Math.random() * CLIENTS) | 0));
      if (!d.allowed || d.source !== 'redis') bad++;
    }
  };
  const redis0 = redisCpuUs(r);
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const redisUs = redisCpuUs(r) - redis0;
  await limiter.close();
  if (bad > 0) throw new Error(`${algorithm} ${shape} c=${concurrency}: ${bad} checks were not allowed by Redis (fallback or denial)`);
  return { rate: calls / seconds, nodeUsPerCheck: (cpu.user + cpu.system) / calls, redisUsPerCheck: redisUs / calls };
}

const decisionsPerSecond = async (r: BenchRedis, redis: Redis, algorithm: AlgorithmName, concurrency: number): Promise<number> =>
  (await run(r, redis, algorithm, concurrency)).rate;

/**
 * The same EVALSHA the limiter sends, from redis-benchmark (C, no client-side work): the ceiling, in
 * calls per second, and the script's own cost inside Redis (INFO commandstats usec_per_call).
 */
function ceiling(
  r: BenchRedis,
  algorithm: AlgorithmName,
  clients: number,
  pipeline: number,
  requests: number,
): { rate: number; usPerCall: number } {
  const opts = resolveOptions({ algorithm, limits: CORE_LIMITS } as LimiterOptions);
  // The script the limiter sends: compiled for these rules where the algorithm can be (algorithms/compile.ts).
  const { lua } = createProgram(opts.algorithm, opts.rules);
  const sha = createHash('sha1').update(lua).digest('hex');
  r.cli('SCRIPT', 'LOAD', lua);
  const mask = '1'.repeat(opts.rules.length);
  // Each __rand_int__ is drawn on its own: ip and user are independent clients, the key count is the same.
  const tag = opts.algorithm.tag;
  const keys = [
    `bench:rb:${tag}:{ip:__rand_int__}`,
    'bench:!b:{ip:__rand_int__}',
    `bench:rb:${tag}:{user:__rand_int__}`,
    'bench:!b:{user:__rand_int__}',
  ];
  const args = ['EVALSHA', sha, '4', ...keys, 'c', '1', '0', '', '0', mask, mask];
  r.cli('CONFIG', 'RESETSTAT');
  const out = execFileSync(
    'taskset',
    [
      '-c',
      String(SERVER_CORE),
      'redis-benchmark',
      '-h',
      '127.0.0.1',
      '-p',
      String(r.port),
      '-n',
      String(requests),
      '-c',
      String(clients),
      '-P',
      String(pipeline),
      '-r',
      String(CLIENTS),
      '--csv',
      ...args,
    ],
    { encoding: 'utf8' },
  );
  const row = out.trim().split('\n').pop()!;
  const usPerCall = Number(/cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(r.cli('INFO', 'commandstats'))?.[1]);
  return { rate: Number(row.split(',')[1]!.replace(/"/g, '')), usPerCall };
}

async function main(): Promise<void> {
  commandLine(
    'npm run bench:core',
    'limiter.check() decisions per second (3 rules x 2 identifiers) at 1, 64 and 256 in flight against the EVALSHA ceiling, memory per identifier, and capacity: the Redis and Node CPU per check (1 x 1 and 3 x 2)',
    [
      { env: 'BENCH_CORE_SECONDS', default: '2', what: 'seconds per measurement' },
      { env: 'BENCH_REPS', default: '3', what: 'runs per row (the median is reported)' },
      { env: 'BENCH_ALGOS', default: 'all four', what: 'a comma list of fixed-window, sliding-window, token-bucket, sliding-log' },
      { env: 'BENCH_AUTOPIPELINE', default: '0', what: "1: ioredis's enableAutoPipelining on the limiter's client" },
      { env: 'BENCH_LEASE', default: '1', what: "0: skip the concurrency lease's rows" },
    ],
    'BENCH_CORE_SECONDS=1 BENCH_REPS=1 npm run bench:core',
  );
  pin(process.pid, SERVER_CORE);
  const r = await startBenchRedis();
  const autoPipelining = process.env.BENCH_AUTOPIPELINE === '1';
  const redis = new Redis(r.url, { enableAutoPipelining: autoPipelining });
  const rows: CoreRow[] = [];
  const capacity: CapacityRow[] = [];
  let leases: LeaseRow[] = [];
  try {
    for (const algorithm of PICKED_ALGORITHMS) {
      await decisionsPerSecond(r, redis, algorithm, 64); // warm-up: JIT, script load
      // Each rep measures ours and the ceiling back to back, and the ratio is taken per rep: other work on
      // this machine shifts both, so the median ratio is steadier than a ratio of medians.
      const reps: { rates: number[]; one: number; full: number; us: number }[] = [];
      for (let rep = 0; rep < REPS; rep++) {
        const rates: number[] = [];
        for (const c of CONCURRENCY) rates.push(await decisionsPerSecond(r, redis, algorithm, c));
        const size = (rate: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, Math.round(rate * SECONDS)));
        const one = ceiling(r, algorithm, 1, 1, size(rates[0]! * 1.5, 2_000, 100_000)).rate;
        const { rate: full, usPerCall: us } = ceiling(r, algorithm, 50, 16, size(rates[2]! * 3, 10_000, 500_000));
        reps.push({ rates, one, full, us });
        process.stderr.write(
          `${algorithm} rep ${rep + 1}: ${rates.map((x) => fmt(x)).join(' / ')} decisions/s; ceilings ${fmt(one)} / ${fmt(full)}\n`,
        );
      }
      const med = (f: (x: (typeof reps)[number]) => number): number => median(reps.map(f));
      const mem = await memoryPerIdentifier(redis, algorithm, 'core-mem');
      rows.push({
        algorithm,
        c1: med((x) => x.rates[0]!),
        ceiling1: med((x) => x.one),
        ratio1: med((x) => x.rates[0]! / x.one),
        c64: med((x) => x.rates[1]!),
        c256: med((x) => x.rates[2]!),
        ceilingFull: med((x) => x.full),
        ratio256: med((x) => x.rates[2]! / x.full),
        memoryUsage: mem.usage,
        usedMemory: mem.used,
        scriptUs: med((x) => x.us),
      });
    }
    // Capacity: at 256 in flight, the CPU a check takes in Redis and in this process, per algorithm and shape.
    for (const algorithm of PICKED_ALGORITHMS)
      for (const shape of Object.keys(SHAPES) as ShapeName[]) {
        await run(r, redis, algorithm, 64, shape); // warm-up
        const runs: Run[] = [];
        for (let rep = 0; rep < REPS; rep++) runs.push(await run(r, redis, algorithm, 256, shape));
        const med = (f: (x: Run) => number): number => median(runs.map(f));
        const row: CapacityRow = {
          algorithm,
          shape,
          rate: med((x) => x.rate),
          redisUsPerCheck: med((x) => x.redisUsPerCheck),
          nodeUsPerCheck: med((x) => x.nodeUsPerCheck),
        };
        capacity.push(row);
        process.stderr.write(
          `${algorithm} ${shape}: ${fmt(row.rate)} checks/s at 256 in flight; Redis ${fmt(row.redisUsPerCheck, 1)} µs and Node ${fmt(row.nodeUsPerCheck, 1)} µs of CPU per check\n`,
        );
      }
    // BENCH_LEASE=0 skips the concurrency lease's rows.
    if (process.env.BENCH_LEASE !== '0') leases = await leaseRows(redis, r, SECONDS, REPS);
  } finally {
    redis.disconnect();
    await r.stop();
  }
  const redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1] ?? '?';
  const meta = {
    date: new Date().toISOString(),
    seconds: SECONDS,
    reps: REPS,
    redisVersion,
    node: process.version,
    autoPipelining,
    serverCore: SERVER_CORE,
    loadCore: LOAD_CORE,
    host: thisHost(),
  };
  const dir = join(__dirname, '..', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'core.json'), `${JSON.stringify({ meta, rows, capacity, leases }, null, 2)}\n`);
  process.stdout.write(coreTable(meta, rows) + capacityTable(capacity) + (leases.length > 0 ? leaseTable(leases) : ''));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
