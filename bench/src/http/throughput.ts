import { readFileSync } from 'node:fs';
import type Redis from 'ioredis';
import { LOAD_CORE, commandCalls, commandUsec, redisCpuMicros, type BenchRedis } from '../lib/machine';
import { keyBytes } from '../lib/memory';
import { median } from '../lib/stats';
import { startTrace, wrk, type LoadResult, type Trace } from './load';
import type { VariantResult } from './report-tables';
import type { Server, ServerSpec } from './servers';
import type { ServerPool } from './server-pool';
import { CLIENTS, SHAPE, type ShapeName } from './shapes';

/*
 * The throughput phase of `npm run bench`, for one framework and shape: the baseline (no limiter) and every
 * variant's server run side by side, and the reps interleave: rep 1 of variant A (a baseline run, then A),
 * rep 1 of B, ..., rep 2 of A, ... so load that comes and goes on a shared machine hits every variant
 * alike. Ratio: the median over reps of (variant req/s / the baseline run just before it).
 */
export interface ThroughputSettings {
  seconds: number;
  reps: number;
  connections: number;
  /** Seconds of load each server takes before it is measured (JIT warm-up); 0: none. */
  warmupSeconds: number;
  /**
   * The smoke run's shortcuts: one baseline run per rep for every variant (not one before each), and a
   * shorter MONITOR trace (commands per request, memory per client). The trace is a run of its own after
   * the measured ones, never during one (Redis writes every command, a script's own calls included, to the
   * monitor, which slows it by more than any limiter's difference), nor in place of the warm-up: a server
   * warmed up that slowly has its JIT colder, and a small one's (a peer's) warms sooner than a larger one's.
   */
  quick: boolean;
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
async function measure(server: Server, r: BenchRedis, random: boolean, s: ThroughputSettings): Promise<Measured> {
  const calls = (): number =>
    [...commandCalls(r.cli('INFO', 'commandstats')).entries()]
      .filter(([k]) => !k.startsWith('info') && !k.startsWith('config'))
      .reduce((a, [, v]) => a + v, 0);
  const redisCpu = (): number => redisCpuMicros(r);
  const usec = (): Map<string, number> => commandUsec(r.cli('INFO', 'commandstats'));
  const u0 = usec();
  const c0 = calls();
  const rc0 = redisCpu();
  const cpu0 = await server.cpuMicros();
  const load0 = coreTicks(LOAD_CORE);
  const load = await wrk(server.port, s.seconds, s.connections, random);
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

/** The apps a shape's throughput runs on: the baseline's, then each variant's. */
export const throughputApps = (framework: string, shape: ShapeName, here: readonly string[], redisUrl: string): ServerSpec[] =>
  ['baseline', ...here].map((variant) => ({ framework, variant, shape, redisUrl }));

export async function throughputShape(
  framework: string,
  shapeName: ShapeName,
  here: readonly string[],
  r: BenchRedis,
  admin: Redis,
  s: ThroughputSettings,
  pool: ServerPool,
  log: (line: string) => void,
): Promise<VariantResult[]> {
  const results: VariantResult[] = [];
  const random = SHAPE[shapeName].random;
  await admin.flushall();
  const taken = await pool.take(throughputApps(framework, shapeName, here, r.url), s.warmupSeconds);
  const [base, ...started] = taken.servers as [Server, ...Server[]];
  const servers = new Map<string, Server>(here.map((variant, i) => [variant, started[i]!]));
  try {
    const traces = new Map<string, Awaited<ReturnType<Trace['stop']>>>();
    const memory = new Map<string, Awaited<ReturnType<typeof keyBytes>>>();
    // Memory per client: from an empty Redis, what one short run leaves (not for hot: one client).
    const traced = async (variant: string, run: () => Promise<LoadResult>): Promise<void> => {
      if (shapeName !== 'hot') await admin.flushall();
      const trace = await startTrace(r.port);
      traces.set(variant, await trace.stop((await run()).requests));
      if (shapeName !== 'hot') memory.set(variant, await keyBytes(admin, '*'));
    };
    // Warm-up (JIT), one server at a time.
    for (const [i, server] of taken.servers.entries())
      if (taken.warmup[i]! > 0) await wrk(server.port, taken.warmup[i]!, s.connections, random);
    const pairs = new Map<string, { base: Measured; run: Measured }[]>(here.map((v) => [v, []]));
    for (let rep = 0; rep < s.reps; rep++) {
      let shared: Measured | undefined;
      for (const variant of here) {
        const baseRun = s.quick ? (shared ??= await measure(base, r, random, s)) : await measure(base, r, random, s);
        pairs.get(variant)!.push({ base: baseRun, run: await measure(servers.get(variant)!, r, random, s) });
      }
    }
    for (const variant of here) {
      const server = servers.get(variant)!;
      const ps = pairs.get(variant)!;
      await traced(variant, () => wrk(server.port, s.quick ? 0.15 : 1, 8, random));
      const trace = traces.get(variant)!;
      const mem = memory.get(variant);
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
      log(
        `${framework} ${shapeName} ${variant}: ${Math.round(res.rps)} req/s = ${res.ratio.toFixed(2)} x baseline ${Math.round(res.baseRps)} (reps ${res.ratios!.map((x) => x.toFixed(2)).join(' ')}), server ${res.cpuUsPerReq.toFixed(0)} µs/req, Redis ${res.redisCpuUsPerReq!.toFixed(1)} µs/req, denied ${(100 * res.non2xxShare).toFixed(1)}%`,
      );
    }
  } finally {
    taken.release();
  }
  return results;
}
