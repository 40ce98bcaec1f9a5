import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Redis from 'ioredis';
import { LOAD_CORE, SERVER_CORE, commandCalls, commandUsec, freePort, pin, startBenchRedis, type BenchRedis } from '../lib/machine';
import { keyBytes } from '../lib/memory';
import { envInt, median } from '../lib/stats';
import { traceCommands, wrk, type LoadResult } from './load';
import { ALL_SHAPES, CLIENTS, SHAPE, SHAPES, isOptIn, runs, type ShapeName } from './shapes';
import { FRAMEWORKS, factoryOf } from './frameworks';
import { printTables, type VariantResult } from './report-tables';
import { mergeRefusal, mergeRun, type HttpMeta } from './merge';
import { thisHost } from '../lib/host';
import { commandLine } from '../lib/command-line';

/*
 * `npm run bench`: every framework x shape x limiter variant. Per framework and shape, the baseline (no
 * limiter) and every variant's server run side by side, and the reps interleave: rep 1 of variant A (a
 * baseline run, then A), rep 1 of B, ..., rep 2 of A, ... so load that comes and goes on a shared machine
 * hits every variant alike. Ratio: the median over reps of (variant req/s / the baseline run just before it).
 * Servers on SERVER_CORE, Redis and wrk on LOAD_CORE. Env: BENCH_SECONDS (3), BENCH_CONNECTIONS (50),
 * BENCH_REPS (5), BENCH_FRAMEWORKS / BENCH_SHAPES / BENCH_VARIANTS (comma lists) to run a subset (opt-in
 * variants such as floodgate+autopipeline and floodgate@before, and the settle shape, run only when listed,
 * see shapes.ts);
 * BENCH_PROFILE_DIR: write a `node --cpu-prof` profile of each limiter server there (summarise with
 * bench/scripts/profile-summary.mjs); BENCH_MERGE=1: replace only the rerun rows of the file; BENCH_OUT: the results file in bench/results (http.json, which
 * bench:report reads; an A/B elsewhere, e.g. ab/flush-size.json). A smoke: BENCH_SECONDS=1 BENCH_REPS=1.
 */
const SECONDS = envInt('BENCH_SECONDS', 3);
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 50);
const REPS = envInt('BENCH_REPS', 5);
const listed = (env: string): string[] | undefined => process.env[env]?.split(',').filter((x) => x !== '');
/** The listed ones out of `all` (in its order), else the defaults. */
const pick = <T extends string>(env: string, all: readonly T[], defaults: readonly T[] = all): T[] => {
  const want = listed(env);
  return want ? all.filter((x) => want.includes(x)) : [...defaults];
};

interface Server {
  port: number;
  child: ChildProcess;
  cpuMicros(): Promise<number>;
  stop(): void;
}

async function startServer(framework: string, variant: string, shape: ShapeName, redisUrl: string): Promise<Server> {
  const port = await freePort();
  const child = fork(join(__dirname, 'server.ts'), [framework, variant, shape, String(port), redisUrl], {
    execArgv: [
      '-r',
      'ts-node/register/transpile-only',
      ...(process.env.BENCH_PROFILE_DIR
        ? [
            '--cpu-prof',
            `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`,
            `--cpu-prof-name=${`${framework}-${shape}-${variant}`.replace(/[^a-z0-9-]/gi, '_')}.${Date.now()}.cpuprofile`,
          ]
        : []),
    ],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${framework}/${variant} exited with ${code}`)));
  });
  pin(child.pid!, SERVER_CORE);
  return {
    port,
    child,
    cpuMicros: () =>
      new Promise((resolve) => {
        child.once('message', (m: { usage: NodeJS.CpuUsage }) => resolve(m.usage.user + m.usage.system));
        child.send({ type: 'cpu' });
      }),
    stop: () => child.kill('SIGTERM'),
  };
}

type Measured = LoadResult & {
  cpuUsPerReq: number;
  /** The server's CPU time over the run's wall time: 1 when it never waited. */
  serverBusy: number;
  /** How busy the core Redis and the load generator share was (/proc/stat). */
  loadCoreBusy: number | undefined;
  redisCmdsPerReq: number;
  redisCpuUsPerReq: number;
  /** INFO commandstats usec per request, by command (a script's includes the commands it calls). */
  usecPerReq: Map<string, number>;
};

/** Busy and total jiffies of one core, from /proc/stat (Linux); undefined where there is none. */
function coreTicks(core: number): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${core} `));
    if (line === undefined) return undefined;
    // user nice system idle iowait irq softirq steal ...: idle and iowait are the idle ones.
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - v[3]! - v[4]!, total };
  } catch {
    return undefined;
  }
}

/** The share of a core that was busy between two readings. */
const busyShare = (a: ReturnType<typeof coreTicks>, b: ReturnType<typeof coreTicks>): number | undefined =>
  a && b && b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : undefined;

/** One wrk run with the server's CPU time and Redis's command counts around it. */
async function measure(server: Server, r: BenchRedis, random: boolean): Promise<Measured> {
  const calls = (): number =>
    [...commandCalls(r.cli('INFO', 'commandstats')).entries()]
      .filter(([k]) => !k.startsWith('info') && !k.startsWith('config'))
      .reduce((a, [, v]) => a + v, 0);
  // Redis's own CPU time (user + system, INFO cpu): what a script's weight costs the shared core.
  const redisCpu = (): number => {
    const info = r.cli('INFO', 'cpu');
    return (Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1])) * 1e6;
  };
  const usec = (): Map<string, number> => commandUsec(r.cli('INFO', 'commandstats'));
  const u0 = usec();
  const c0 = calls();
  const rc0 = redisCpu();
  const cpu0 = await server.cpuMicros();
  const load0 = coreTicks(LOAD_CORE);
  const load = await wrk(server.port, SECONDS, CONNECTIONS, random);
  const load1 = coreTicks(LOAD_CORE);
  const cpu1 = await server.cpuMicros();
  const rc1 = redisCpu();
  const c1 = calls();
  const u1 = usec();
  if (load.errors > 0) process.stderr.write(`  warning: ${load.errors} socket errors\n`);
  return {
    ...load,
    cpuUsPerReq: (cpu1 - cpu0) / load.requests,
    serverBusy: (cpu1 - cpu0) / (load.seconds * 1e6),
    loadCoreBusy: busyShare(load0, load1),
    redisCmdsPerReq: (c1 - c0) / load.requests,
    redisCpuUsPerReq: (rc1 - rc0) / load.requests,
    usecPerReq: new Map([...u1].map(([k, v]) => [k, (v - (u0.get(k) ?? 0)) / load.requests])),
  };
}

async function main(): Promise<void> {
  commandLine(
    'npm run bench',
    'HTTP throughput of every framework x shape x limiter variant against the framework without a limiter; writes bench/results, then bench:report rewrites the tables and figures',
    [
      { env: 'BENCH_SECONDS', default: '3', what: 'seconds of load per measurement' },
      { env: 'BENCH_REPS', default: '5', what: 'interleaved repetitions (baseline, then variant) per variant' },
      { env: 'BENCH_CONNECTIONS', default: '50', what: "wrk's open connections" },
      { env: 'BENCH_FRAMEWORKS', default: 'all', what: `a comma list of ${Object.keys(FRAMEWORKS).join(', ')}` },
      { env: 'BENCH_SHAPES', default: SHAPES.join(','), what: `a comma list of ${ALL_SHAPES.join(', ')}` },
      {
        env: 'BENCH_VARIANTS',
        default: 'all but opt-in',
        what: 'a comma list of limiter variants (bench/src/http/shapes.ts; opt-in ones run only when listed)',
      },
      { env: 'BENCH_OUT', default: 'http.json', what: 'the results file in bench/results' },
      { env: 'BENCH_MERGE', default: '0', what: '1: replace only the rerun rows of BENCH_OUT (same kind of machine only)' },
      { env: 'BENCH_PROFILE_DIR', default: 'none', what: 'write a node --cpu-prof profile of each limiter server there' },
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
  // A merge that would be refused at the end is refused before the run, not after it.
  const out = join(__dirname, '..', '..', 'results', process.env.BENCH_OUT ?? 'http.json');
  if (process.env.BENCH_MERGE === '1' && existsSync(out)) {
    const refused = mergeRefusal((JSON.parse(readFileSync(out, 'utf8')) as { meta: HttpMeta }).meta.host, thisHost());
    if (refused !== undefined) throw new Error(refused);
  }
  pin(process.pid, LOAD_CORE);
  const r = await startBenchRedis();
  const admin = new Redis(r.url);
  const results: VariantResult[] = [];
  const started = Date.now();
  try {
    for (const framework of pick('BENCH_FRAMEWORKS', Object.keys(FRAMEWORKS))) {
      const all = Object.keys(FRAMEWORKS[framework]!).filter((v) => v !== 'baseline');
      const wanted = listed('BENCH_VARIANTS');
      const variants = wanted
        ? wanted.filter((v) => v !== 'baseline' && factoryOf(framework, v) !== undefined)
        : all.filter((v) => !isOptIn(v));
      for (const shapeName of pick('BENCH_SHAPES', ALL_SHAPES, SHAPES)) {
        const here = variants.filter((v) => runs(framework, v, shapeName));
        if (here.length === 0) continue;
        const random = SHAPE[shapeName].random;
        await admin.flushall();
        const base = await startServer(framework, 'baseline', shapeName, r.url);
        const servers = new Map<string, Server>();
        try {
          await wrk(base.port, 1, CONNECTIONS, random); // warm-up (JIT)
          for (const variant of here) {
            const server = await startServer(framework, variant, shapeName, r.url);
            servers.set(variant, server);
            await wrk(server.port, 1, CONNECTIONS, random);
          }
          const pairs = new Map<string, { base: Measured; run: Measured }[]>(here.map((v) => [v, []]));
          for (let rep = 0; rep < REPS; rep++)
            for (const variant of here)
              pairs.get(variant)!.push({ base: await measure(base, r, random), run: await measure(servers.get(variant)!, r, random) });
          for (const variant of here) {
            const server = servers.get(variant)!;
            const ps = pairs.get(variant)!;
            // Memory per client: from an empty Redis, what one short run leaves (not for hot: one client).
            if (shapeName !== 'hot') await admin.flushall();
            const trace = await traceCommands(r.port, server.port, random);
            const mem = shapeName === 'hot' ? undefined : await keyBytes(admin, '*');
            const seen = CLIENTS * (1 - Math.pow(1 - 1 / CLIENTS, trace.requests));
            const m = (f: (p: (typeof ps)[number]) => number): number => median(ps.map(f));
            const onWire = [...trace.wire.keys()];
            const res: VariantResult = {
              framework,
              shape: shapeName,
              variant,
              rps: m((p) => p.run.rps),
              baseRps: m((p) => p.base.rps),
              ratio: m((p) => p.run.rps / p.base.rps),
              ratios: ps.map((p) => p.run.rps / p.base.rps),
              p50Ms: m((p) => p.run.p50Ms),
              p99Ms: m((p) => p.run.p99Ms),
              baseP50Ms: m((p) => p.base.p50Ms),
              baseP99Ms: m((p) => p.base.p99Ms),
              cpuUsPerReq: m((p) => p.run.cpuUsPerReq),
              serverBusy: m((p) => p.run.serverBusy),
              ...(ps.every((p) => p.run.loadCoreBusy !== undefined) ? { loadCoreBusy: m((p) => p.run.loadCoreBusy!) } : {}),
              baseCpuUsPerReq: m((p) => p.base.cpuUsPerReq),
              redisCpuUsPerReq: m((p) => p.run.redisCpuUsPerReq),
              redisCmdUsPerReq: m((p) => onWire.reduce((a, k) => a + (p.run.usecPerReq.get(k) ?? 0), 0)),
              non2xxShare: m((p) => p.run.non2xx / p.run.requests),
              wirePerReq: Object.fromEntries([...trace.wire].map(([k, v]) => [k, v / trace.requests])),
              luaPerReq: trace.lua / trace.requests,
              allCmdsPerReq: m((p) => p.run.redisCmdsPerReq),
              bytesPerClient: mem && trace.requests > 0 ? mem.bytes / seen : undefined,
              keys: mem?.keys,
            };
            results.push(res);
            process.stderr.write(
              `${framework} ${shapeName} ${variant}: ${Math.round(res.rps)} req/s = ${res.ratio.toFixed(2)} x baseline ${Math.round(res.baseRps)} (reps ${res.ratios!.map((x) => x.toFixed(2)).join(' ')}), server ${res.cpuUsPerReq.toFixed(0)} µs/req, Redis ${res.redisCpuUsPerReq!.toFixed(1)} µs/req, denied ${(100 * res.non2xxShare).toFixed(1)}%\n`,
            );
          }
        } finally {
          for (const s of servers.values()) s.stop();
          base.stop();
        }
      }
    }
  } finally {
    admin.disconnect();
    await r.stop();
  }
  const run = {
    meta: {
      date: new Date().toISOString(),
      seconds: SECONDS,
      connections: CONNECTIONS,
      reps: REPS,
      minutes: (Date.now() - started) / 60_000,
      host: thisHost(),
    },
    results,
  };
  // In run order: framework, then shape (a merged row goes back where a full run puts it).
  const order = Object.keys(FRAMEWORKS);
  const rank = (r: VariantResult): number => order.indexOf(r.framework) * ALL_SHAPES.length + ALL_SHAPES.indexOf(r.shape as ShapeName);
  const written =
    process.env.BENCH_MERGE === '1' && existsSync(out)
      ? mergeRun(JSON.parse(readFileSync(out, 'utf8')) as { meta: HttpMeta; results: VariantResult[] }, run, rank)
      : run;
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(written, null, 2)}\n`);
  process.stdout.write(printTables(results));
  // The tables, chart and quoted figures follow the results file (what `npm run bench:report` does alone).
  execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', join(__dirname, '..', 'report.ts')], { stdio: 'inherit' });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
