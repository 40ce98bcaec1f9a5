import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Redis from 'ioredis';
import { LOAD_CORE, pin, startBenchRedis } from '../lib/machine';
import { envInt } from '../lib/stats';
import { ALL_SHAPES, SHAPES, isOptIn, runs, type ShapeName } from './shapes';
import { FRAMEWORKS, factoryOf } from './frameworks';
import { buildNextApp } from './apps-next';
import { printTables, type VariantResult } from './report-tables';
import { mergeRefusal, mergeRun, type HttpMeta } from './merge';
import { thisHost } from '../lib/host';
import { openLoopBinary } from './open-loop';
import { commandLine } from '../lib/command-line';
import { throughputApps, throughputShape, type ThroughputSettings } from './throughput';
import { latencyApps, latencyPhase, latencyVariants, type LatencyRow, type LatencySettings } from './latency';
import { ownServers, sharedServers, type ServerPool } from './server-pool';
import { startSlowProxy, type SlowProxy } from '../lib/slow-proxy';
import { printLatencyTable, type LatencyMeta } from './latency-table';

/*
 * `npm run bench`: every framework x shape x limiter variant, in two phases. Throughput (throughput.ts):
 * req/s of each limiter against the framework without one, baseline and limiter interleaved rep by rep.
 * Latency (latency.ts): what each limiter adds to the latency of a request at 25/50/75% of the framework's
 * capacity under an open-loop load, and against a Redis that answers late. Servers on SERVER_CORE, Redis
 * and the load generators on LOAD_CORE. The settings are environment variables (`npm run bench -- --help`).
 * BENCH_SMOKE=1: the whole bench in under 3 minutes (1 rep of 0.4 s per measurement, one server process per
 * variant for every shape, tiering up sooner, warmed up for 1 s once and 0.25 s per later shape; shorter
 * latency runs), written
 * to bench/results/smoke/ with its tables marked indicative; the docs keep the full run's figures.
 */
const SMOKE = process.env.BENCH_SMOKE === '1';
const SECONDS = envInt('BENCH_SECONDS', SMOKE ? 0.4 : 3);
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 50);
const REPS = envInt('BENCH_REPS', SMOKE ? 1 : 5);
const THROUGHPUT: ThroughputSettings = {
  seconds: SECONDS,
  reps: REPS,
  connections: CONNECTIONS,
  /*
   * A server started cold serves about half its rate in its second second, and Floodgate reaches its own
   * later than its peers (about 1.5 s against 1 s; bench/src/http/warm-up.ts). A full run's five interleaved
   * reps of 3 s outlast that. The smoke run's servers tier up sooner (SMOKE_NODE_FLAGS) and warm up 1 s.
   */
  warmupSeconds: 1,
  quick: SMOKE,
};
const LATENCY: LatencySettings = {
  seconds: envInt('BENCH_LATENCY_SECONDS', SMOKE ? 0.4 : 3),
  warmup: SMOKE ? 0.2 : 1,
  reps: envInt('BENCH_LATENCY_REPS', SMOKE ? 1 : 3),
  // The smoke run takes the target's load only (50%).
  loads: (process.env.BENCH_LATENCY_LOADS ?? (SMOKE ? '50' : '10,25,50,75')).split(',').map((p) => {
    const n = Number(p);
    if (!(n > 0 && n < 100)) throw new Error(`BENCH_LATENCY_LOADS must list percentages between 0 and 100; got ${p}`);
    return n / 100;
  }),
  connections: CONNECTIONS,
  slowMs: envInt('BENCH_SLOW_REDIS_MS', 1, true),
  capacitySeconds: SECONDS,
  warmupSeconds: 1,
  quick: SMOKE,
};
/*
 * Next.js's servers warm up longer: each route's code loads on its first request, and a request runs
 * through far more JavaScript than on the other frameworks, at a tenth of their rate, so 1 s of load
 * leaves its JIT cold (server CPU per request still falling over the first 10-20 s on a loaded machine).
 */
const NEXT_WARMUP = envInt('BENCH_NEXT_WARMUP', SMOKE ? 2 : 5);
/**
 * The smoke run's servers hold every app of their variant (server-pool.ts): a process's later apps take
 * this much warm-up, for the code their shape runs and the rest of the process does not.
 */
const REWARM_SECONDS = 0.25;
/**
 * The smoke run's servers run V8 with a quarter of its default interrupt budget: a function is optimized
 * after a quarter of the work, so a server reaches its rate in about half the load (warm-up.ts shows it),
 * every server alike. The full run keeps V8's defaults, as users run.
 */
const SMOKE_NODE_FLAGS = '--interrupt-budget=16384';
if (SMOKE) process.env.BENCH_NODE_FLAGS ??= SMOKE_NODE_FLAGS;
const PHASES = (process.env.BENCH_PHASES ?? 'throughput,latency').split(',');
for (const p of PHASES) if (p !== 'throughput' && p !== 'latency') throw new Error(`BENCH_PHASES lists throughput and latency; got ${p}`);
const RESULTS = join(__dirname, '..', '..', 'results', ...(SMOKE ? ['smoke'] : []));
const listed = (env: string): string[] | undefined => process.env[env]?.split(',').filter((x) => x !== '');
/** The listed ones out of `all` (in its order), else the defaults. */
const pick = <T extends string>(env: string, all: readonly T[], defaults: readonly T[] = all): T[] => {
  const want = listed(env);
  return want ? all.filter((x) => want.includes(x)) : [...defaults];
};
const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const writeJson = (file: string, value: unknown): void => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
};

async function main(): Promise<void> {
  commandLine(
    'npm run bench',
    'HTTP throughput and added latency of every framework x shape x limiter variant against the framework without a limiter; writes bench/results, then bench:report rewrites the tables and figures',
    [
      { env: 'BENCH_SMOKE', default: '0', what: '1: the whole bench in under 3 minutes, indicative figures, into bench/results/smoke' },
      { env: 'BENCH_PHASES', default: 'throughput,latency', what: 'the phases to run: throughput, latency or both' },
      {
        env: 'BENCH_SECONDS',
        default: '3 (smoke 0.4)',
        what: 'seconds of load per throughput measurement (after a warm-up of 1 s)',
      },
      { env: 'BENCH_REPS', default: '5 (smoke 1)', what: 'interleaved repetitions (baseline, then variant) per variant' },
      { env: 'BENCH_LATENCY_SECONDS', default: '3 (smoke 0.4)', what: 'seconds of open-loop load per latency measurement' },
      { env: 'BENCH_LATENCY_REPS', default: '3 (smoke 1)', what: 'interleaved repetitions per latency case' },
      {
        env: 'BENCH_LATENCY_LOADS',
        default: '10,25,50,75 (smoke 50)',
        what: "the offered rates, in % of the framework's capacity without a limiter",
      },
      {
        env: 'BENCH_SLOW_REDIS_MS',
        default: '1',
        what: 'the slow Redis: ms added to every reply (latency phase, at 50% load); 0: no slow-Redis rows',
      },
      { env: 'BENCH_CONNECTIONS', default: '50', what: "wrk's open connections" },
      {
        env: 'BENCH_NEXT_WARMUP',
        default: '5 (smoke 2)',
        what: 'seconds of load each Next.js server takes before it is measured (1 on the others)',
      },
      {
        env: 'BENCH_FRAMEWORKS',
        default: 'all',
        what: `a comma list of ${Object.keys(FRAMEWORKS).join(', ')} (next: its app is built once, then cached in bench/next-app/.next)`,
      },
      { env: 'BENCH_SHAPES', default: SHAPES.join(','), what: `a comma list of ${ALL_SHAPES.join(', ')}` },
      {
        env: 'BENCH_VARIANTS',
        default: 'all but opt-in',
        what: 'a comma list of limiter variants (bench/src/http/shapes.ts; opt-in ones run only when listed)',
      },
      { env: 'BENCH_OUT', default: 'http.json', what: 'the results file in bench/results' },
      { env: 'BENCH_LATENCY_OUT', default: 'latency.json', what: "the latency phase's results file in bench/results" },
      { env: 'BENCH_MERGE', default: '0', what: '1: replace only the rerun rows of BENCH_OUT (same kind of machine only)' },
      { env: 'BENCH_PROFILE_DIR', default: 'none', what: 'write a node --cpu-prof profile of each limiter server there' },
      {
        env: 'BENCH_NODE_FLAGS',
        default: `none (smoke ${SMOKE_NODE_FLAGS})`,
        what: "node flags for every server (space-separated), e.g. V8's --trace-gc",
      },
      { env: 'BENCH_BEFORE', default: 'none', what: 'the build floodgate@before loads (bench/scripts/snapshot-before.sh)' },
      { env: 'BENCH_BUILDS', default: 'none', what: 'the folder of builds floodgate@<build> loads' },
    ],
    'BENCH_SECONDS=1 BENCH_REPS=1 BENCH_FRAMEWORKS=express npm run bench',
  );
  for (const tool of ['wrk', 'taskset']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      throw new Error(`npm run bench needs ${tool} on the PATH (Debian: apt-get install ${tool === 'wrk' ? 'wrk' : 'util-linux'})`);
    }
  }
  const merge = process.env.BENCH_MERGE === '1';
  // A merge that would be refused at the end is refused before the run, not after it.
  const out = join(RESULTS, process.env.BENCH_OUT ?? 'http.json');
  const latencyOut = join(RESULTS, process.env.BENCH_LATENCY_OUT ?? 'latency.json');
  // Only the files this run writes: a phase's file measured on another machine is left alone.
  for (const file of [...(PHASES.includes('throughput') ? [out] : []), ...(PHASES.includes('latency') ? [latencyOut] : [])])
    if (merge && existsSync(file)) {
      const refused = mergeRefusal(readJson<{ meta: HttpMeta }>(file).meta.host, thisHost());
      if (refused !== undefined) throw new Error(refused);
    }
  if (PHASES.includes('latency')) openLoopBinary(); // a missing C compiler fails now, not after the throughput phase
  const frameworks = pick('BENCH_FRAMEWORKS', Object.keys(FRAMEWORKS));
  // Next.js: `next build` of bench/next-app, unless its build is of the same sources (before pinning: it takes both cores).
  const building = Date.now();
  if (frameworks.includes('next')) buildNextApp((line) => process.stderr.write(`${line}\n`));
  const buildMs = Date.now() - building;
  pin(process.pid, LOAD_CORE);
  const r = await startBenchRedis();
  const admin = new Redis(r.url);
  const results: VariantResult[] = [];
  const latency: LatencyRow[] = [];
  const started = Date.now();
  const log = (line: string): boolean => process.stderr.write(`${line}\n`);
  let proxy: SlowProxy | undefined;
  try {
    if (PHASES.includes('latency') && LATENCY.slowMs > 0) proxy = await startSlowProxy(r.port, LATENCY.slowMs);
    for (const framework of frameworks) {
      const warm = <S extends { warmupSeconds: number }>(settings: S): S =>
        framework === 'next' ? { ...settings, warmupSeconds: NEXT_WARMUP } : settings;
      const all = Object.keys(FRAMEWORKS[framework]!).filter((v) => v !== 'baseline');
      const wanted = listed('BENCH_VARIANTS');
      const variants = wanted
        ? wanted.filter((v) => v !== 'baseline' && factoryOf(framework, v) !== undefined)
        : all.filter((v) => !isOptIn(v));
      const shapes = PHASES.includes('throughput')
        ? pick('BENCH_SHAPES', ALL_SHAPES, SHAPES)
            .map((shape) => ({ shape, here: variants.filter((v) => runs(framework, v, shape)) }))
            .filter((x) => x.here.length > 0)
        : [];
      const timed = PHASES.includes('latency') ? latencyVariants(framework, variants, listed('BENCH_VARIANTS')) : [];
      // The smoke run starts every server of the framework's phases now, one process per variant; a full run, per phase.
      const pool: ServerPool = SMOKE
        ? await sharedServers(
            [
              ...shapes.flatMap((x) => throughputApps(framework, x.shape, x.here, r.url)),
              ...(timed.length > 0 ? latencyApps(framework, timed, r.url, proxy?.url) : []),
            ],
            REWARM_SECONDS,
          )
        : ownServers;
      try {
        for (const { shape, here } of shapes)
          results.push(...(await throughputShape(framework, shape, here, r, admin, warm(THROUGHPUT), pool, log)));
        if (timed.length > 0) {
          await admin.flushall();
          latency.push(...(await latencyPhase(framework, timed, r, proxy?.url, warm(LATENCY), pool, log)));
        }
      } finally {
        pool.close();
      }
    }
  } finally {
    await proxy?.close();
    admin.disconnect();
    await r.stop();
  }
  const meta = {
    date: new Date().toISOString(),
    seconds: SECONDS,
    connections: CONNECTIONS,
    reps: REPS,
    minutes: (Date.now() - started) / 60_000,
    host: thisHost(),
    ...(SMOKE ? { smoke: true } : {}),
  };
  if (SMOKE)
    process.stdout.write(
      `\nSMOKE RUN (BENCH_SMOKE=1): 1 rep of ${SECONDS} s per figure, ${((process.uptime() * 1000 - buildMs) / 60_000).toFixed(1)} minutes from start to end${buildMs >= 1000 ? ` (and ${(buildMs / 60_000).toFixed(1)} building bench/next-app)` : ''}. Indicative only: the docs quote the full run.\n`,
    );
  if (PHASES.includes('throughput')) {
    // In run order: framework, then shape (a merged row goes back where a full run puts it).
    const order = Object.keys(FRAMEWORKS);
    const rank = (v: VariantResult): number => order.indexOf(v.framework) * ALL_SHAPES.length + ALL_SHAPES.indexOf(v.shape as ShapeName);
    const run = { meta, results };
    writeJson(out, merge && existsSync(out) ? mergeRun(readJson<{ meta: HttpMeta; results: VariantResult[] }>(out), run, rank) : run);
    process.stdout.write(printTables(results));
  }
  if (PHASES.includes('latency')) {
    const latencyMeta: LatencyMeta = {
      ...meta,
      seconds: LATENCY.seconds,
      reps: LATENCY.reps,
      warmup: LATENCY.warmup,
      slowMs: LATENCY.slowMs,
    };
    // BENCH_MERGE=1: the rerun frameworks' rows replace theirs; the other frameworks' stay.
    const kept =
      merge && existsSync(latencyOut)
        ? readJson<{ rows: LatencyRow[] }>(latencyOut).rows.filter((row) => !latency.some((l) => l.framework === row.framework))
        : [];
    writeJson(latencyOut, { meta: latencyMeta, rows: [...kept, ...latency] });
    process.stdout.write(printLatencyTable(latency, latencyMeta));
  }
  // The tables, chart and quoted figures follow the results files (what `npm run bench:report` does alone).
  if (!SMOKE)
    execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', join(__dirname, '..', 'report.ts')], { stdio: 'inherit' });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
