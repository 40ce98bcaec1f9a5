import { redisCpuMicros, type BenchRedis } from '../lib/machine';
import { median } from '../lib/stats';
import { openLoop, type OpenLoopResult } from './open-loop';
import type { Server, ServerSpec } from './servers';
import type { ServerPool } from './server-pool';
import { CLIENTS, HEADERS_OFF, isHand429, isOptIn, runs } from './shapes';
import { wrk } from './load';

/*
 * The latency phase of `npm run bench`: what a limiter adds to the latency of every request, at a fixed
 * offered rate. Per framework, the capacity is what wrk gets from the app without a limiter (closed loop,
 * as the throughput phase measures it); then each limiter and that baseline app take the same open-loop
 * load (open-loop.c: requests due on a schedule, each timed from when it was due) at 10%, 25%, 50% and 75% of
 * it, baseline and limiter interleaved rep by rep, on the `equal` shape (1 rule x 1 identifier, 10,000
 * random clients, nobody denied), over enough connections that a request waits for a free one only once
 * answers take CONNECTION_BUDGET_MS (openLoopConnections). Added latency at a percentile is the limiter's
 * minus the baseline's of the same rep; the row keeps the median over reps. A second set runs the limiters against a Redis that
 * answers `slowMs` late (slow-proxy.ts) at 50% load: what a slow store adds, and that Floodgate's deadline
 * (`timeoutMs`, 250 ms by default) caps the tail.
 */
export interface Percentiles {
  p50: number;
  p99: number;
  p999: number;
}

export interface LatencyRow {
  framework: string;
  variant: string;
  /** 'loopback': the bench's Redis; 'slow': the same behind a proxy that delays every reply by slowMs. */
  redis: 'loopback' | 'slow';
  /** The offered rate as a share of the framework's capacity without a limiter. */
  load: number;
  rate: number;
  capacity: number;
  /** The open-loop connections (openLoopConnections); absent from results files written before it varied. */
  connections?: number;
  /** µs; medians over reps. */
  base: Percentiles;
  run: Percentiles;
  added: Percentiles;
  /** Each rep's added p99 (µs), to show the spread. */
  addedP99Reps: number[];
  non2xxShare: number;
  /** Socket errors and requests never answered, summed over reps (a run with any is suspect). */
  errors: number;
  lost: number;
  /**
   * The server's CPU µs per request, its core's busy share over the run, and Redis's CPU µs per request,
   * beside the baseline's (medians over reps): an open-loop request arrives alone, so it costs the server
   * more than under wrk's closed loop (one read and one write of its own), and how busy the server's core
   * is at a given load is what its tail follows. Absent from results files written before they were measured.
   */
  cpuUsPerReq?: number;
  baseCpuUsPerReq?: number;
  serverBusy?: number;
  baseServerBusy?: number;
  redisCpuUsPerReq?: number;
}

/**
 * A connection carries one request at a time, so at `rate` requests a second that each take L ms, rate x L
 * are on the wire at once: with fewer connections than that, requests queue in the generator for one, and
 * that queue, not the server or the limiter, sets their latency. The generator opens one connection per
 * this many ms of every second's requests, so the queue forms only past it: 50 connections at 36,000
 * requests a second left 1.4 ms per request, less than a Redis 1 ms away takes.
 */
export const CONNECTION_BUDGET_MS = 10;

/** The open-loop connections for `rate` requests a second: rate x CONNECTION_BUDGET_MS, and at least `least`. */
export function openLoopConnections(rate: number, least: number): number {
  return Math.max(least, Math.ceil((rate * CONNECTION_BUDGET_MS) / 1000));
}

/** One open-loop run with what it cost the server and Redis. */
interface MeasuredRun extends OpenLoopResult {
  cpuUsPerReq: number;
  serverBusy: number;
  redisCpuUsPerReq: number;
}

export interface LatencySettings {
  seconds: number;
  warmup: number;
  reps: number;
  loads: number[];
  /** The fewest open-loop connections (openLoopConnections: more at higher rates). */
  connections: number;
  slowMs: number;
  /** Seconds of closed-loop load that measure the capacity. */
  capacitySeconds: number;
  /** Seconds of load each server takes before it is measured (JIT warm-up); 0: none. */
  warmupSeconds: number;
  /** The smoke run's shortcut: one baseline run per load and rep, for every limiter (not one before each). */
  quick: boolean;
}

/**
 * The variants the latency phase runs on a framework: Floodgate's default and every peer of that framework,
 * Floodgate without headers where a peer sends none (Express: the same HTTP work as rate-limiter-flexible's),
 * and an opt-in variant (`floodgate@before`, for an A/B) when `listed` (BENCH_VARIANTS) names it.
 */
export function latencyVariants(framework: string, all: readonly string[], listed: readonly string[] = []): string[] {
  return all.filter(
    (v) =>
      v !== 'baseline' &&
      !isHand429(v) &&
      (!isOptIn(v) || listed.includes(v)) &&
      (!v.startsWith('floodgate:') || v === `floodgate:${HEADERS_OFF}`) &&
      runs(framework, v, 'equal'),
  );
}

const percentiles = (r: OpenLoopResult): Percentiles => ({ p50: r.p50Us, p99: r.p99Us, p999: r.p999Us });

/** The apps the latency phase runs on: the baseline's, each variant's, then each variant's on the slow Redis (`slowUrl`). */
export const latencyApps = (framework: string, variants: readonly string[], redisUrl: string, slowUrl: string | undefined): ServerSpec[] =>
  [
    { variant: 'baseline', url: redisUrl },
    ...variants.map((variant) => ({ variant, url: redisUrl })),
    ...(slowUrl === undefined ? [] : variants.map((variant) => ({ variant, url: slowUrl }))),
  ].map((x) => ({ framework, variant: x.variant, shape: 'equal' as const, redisUrl: x.url }));

/** `slowUrl`: the slow Redis (a proxy that delays every reply by `s.slowMs`: slow-proxy.ts), or none. */
export async function latencyPhase(
  framework: string,
  variants: readonly string[],
  redis: Pick<BenchRedis, 'url' | 'cli'>,
  slowUrl: string | undefined,
  s: LatencySettings,
  pool: ServerPool,
  log: (line: string) => void,
): Promise<LatencyRow[]> {
  const taken = await pool.take(latencyApps(framework, variants, redis.url, slowUrl), s.warmupSeconds);
  const servers: Server[] = taken.servers;
  try {
    // JIT warm-up, one server at a time, as the throughput phase does.
    for (const [i, server] of servers.entries()) if (taken.warmup[i]! > 0) await wrk(server.port, taken.warmup[i]!, s.connections, true);
    const base = servers[0]!;
    const fast = new Map(variants.map((v, i) => [v, servers[1 + i]!]));
    const slow = new Map(slowUrl === undefined ? [] : variants.map((v, i) => [v, servers[1 + variants.length + i]!]));
    const capacity = (await wrk(base.port, s.capacitySeconds, s.connections, true)).rps;

    const cases = [
      ...s.loads.flatMap((load) => variants.map((variant) => ({ variant, load, redis: 'loopback' as const, server: fast.get(variant)! }))),
      ...[...slow].map(([variant, server]) => ({ variant, load: 0.5, redis: 'slow' as const, server })),
    ];
    const pairs = new Map(cases.map((c) => [c, [] as { base: MeasuredRun; run: MeasuredRun }[]]));
    const at = async (server: Server, load: number): Promise<MeasuredRun> => {
      const cpu0 = await server.cpuMicros();
      const redis0 = redisCpuMicros(redis);
      const started = performance.now();
      const result = await openLoop({
        port: server.port,
        rate: capacity * load,
        seconds: s.seconds,
        warmup: s.warmup,
        connections: openLoopConnections(capacity * load, s.connections),
        clients: CLIENTS,
      });
      const wallUs = (performance.now() - started) * 1000;
      const cpu = (await server.cpuMicros()) - cpu0;
      // Every request sent, the warm-up's too: the CPU readings span the whole run.
      const sent = Math.max(1, result.scheduled);
      return { ...result, cpuUsPerReq: cpu / sent, serverBusy: cpu / wallUs, redisCpuUsPerReq: (redisCpuMicros(redis) - redis0) / sent };
    };
    for (let rep = 0; rep < s.reps; rep++) {
      const shared = new Map<number, MeasuredRun>(); // quick: one baseline run per load and rep
      for (const c of cases) {
        let baseRun = s.quick ? shared.get(c.load) : undefined;
        if (baseRun === undefined) {
          baseRun = await at(base, c.load);
          shared.set(c.load, baseRun);
        }
        pairs.get(c)!.push({ base: baseRun, run: await at(c.server, c.load) });
      }
    }

    return cases.map((c) => {
      const ps = pairs.get(c)!;
      const m = (f: (p: (typeof ps)[number]) => number): number => median(ps.map(f));
      const added = (k: keyof Percentiles) => m((p) => percentiles(p.run)[k] - percentiles(p.base)[k]);
      const row: LatencyRow = {
        framework,
        variant: c.variant,
        redis: c.redis,
        load: c.load,
        rate: capacity * c.load,
        capacity,
        connections: openLoopConnections(capacity * c.load, s.connections),
        base: { p50: m((p) => p.base.p50Us), p99: m((p) => p.base.p99Us), p999: m((p) => p.base.p999Us) },
        run: { p50: m((p) => p.run.p50Us), p99: m((p) => p.run.p99Us), p999: m((p) => p.run.p999Us) },
        added: { p50: added('p50'), p99: added('p99'), p999: added('p999') },
        addedP99Reps: ps.map((p) => p.run.p99Us - p.base.p99Us),
        non2xxShare: m((p) => p.run.non2xx / Math.max(1, p.run.measured)),
        errors: ps.reduce((a, p) => a + p.run.errors + p.base.errors, 0),
        lost: ps.reduce((a, p) => a + p.run.lost + p.base.lost, 0),
        cpuUsPerReq: m((p) => p.run.cpuUsPerReq),
        baseCpuUsPerReq: m((p) => p.base.cpuUsPerReq),
        serverBusy: m((p) => p.run.serverBusy),
        baseServerBusy: m((p) => p.base.serverBusy),
        redisCpuUsPerReq: m((p) => p.run.redisCpuUsPerReq),
      };
      log(
        `${framework} latency ${c.variant}${c.redis === 'slow' ? ` (Redis +${s.slowMs} ms)` : ''} at ${Math.round(100 * c.load)}% (${Math.round(row.rate)} req/s): added p50 ${row.added.p50.toFixed(0)} µs, p99 ${row.added.p99.toFixed(0)} µs, p99.9 ${row.added.p999.toFixed(0)} µs; server ${row.cpuUsPerReq!.toFixed(0)} µs/req (baseline ${row.baseCpuUsPerReq!.toFixed(0)}), its core ${Math.round(100 * row.serverBusy!)}% busy (baseline ${Math.round(100 * row.baseServerBusy!)}%), Redis ${row.redisCpuUsPerReq!.toFixed(1)} µs/req`,
      );
      return row;
    });
  } finally {
    taken.release();
  }
}
