import { fmt, markdownTable } from '../lib/stats';

/** One limiter variant on one framework and shape: medians over the reps, ratios per rep. */
export interface VariantResult {
  framework: string;
  shape: string;
  variant: string;
  rps: number;
  baseRps: number;
  /** Median over reps of (this run's req/s / the baseline run just before it). */
  ratio: number;
  /** Each rep's ratio, in run order (how noisy the median is). */
  ratios?: number[];
  p50Ms: number;
  p99Ms: number;
  baseP50Ms: number;
  baseP99Ms: number;
  cpuUsPerReq: number;
  baseCpuUsPerReq: number;
  /** The server's CPU time over the run's wall time (1: it never waited on Redis or the network). */
  serverBusy?: number;
  /** How busy the core Redis and the load generator share was (/proc/stat), 0-1. */
  loadCoreBusy?: number;
  /** Redis's CPU time (INFO cpu) per request. */
  redisCpuUsPerReq?: number;
  /** INFO commandstats usec per request of the commands sent over the wire (a script's includes what it calls). */
  redisCmdUsPerReq?: number;
  /** Share of responses that were not 2xx (denials). */
  non2xxShare: number;
  /** Commands sent over the wire per request, by name (MONITOR, script-internal ones excluded). */
  wirePerReq: Record<string, number>;
  /** Commands run inside Lua scripts per request. */
  luaPerReq: number;
  /** Every command Redis counted (INFO commandstats), per request. */
  allCmdsPerReq: number;
  /** Sum of MEMORY USAGE of every key / clients seen. */
  bytesPerClient?: number;
  keys?: number;
}

function wire(r: VariantResult): string {
  const parts = Object.entries(r.wirePerReq)
    .filter(([, v]) => v >= 0.005)
    .sort((a, b) => b[1] - a[1]);
  const total = parts.reduce((a, [, v]) => a + v, 0);
  return `${fmt(total, 2)}${parts.length ? ` (${parts.map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')})` : ''}`;
}

const pct = (v: number | undefined): string => (v === undefined ? '-' : `${fmt(100 * v, 0)}%`);
/** How busy the server's core and the core Redis shares with the load generator were. */
export const busy = (r: VariantResult): string => `${pct(r.serverBusy)} / ${pct(r.loadCoreBusy)}`;

const SHAPE_TITLE: Record<string, string> = {
  equal: 'equal: 1 rule x 1 identifier on both sides (equal work, nobody denied)',
  '3x2': '3x2: Floodgate 3 rules x 2 identifiers in one check; peers 3 rules stacked on 1 identifier (nobody denied)',
  multi: 'multi: 10/s + 120/min + 240/h on the client, 10x that on its organisation, on both sides (6 pairs; compare the denied share)',
  hot: 'hot: one client, denied after its first 100 requests (100 per hour)',
  settle:
    'settle: requests + tokens on 1 identifier, each request counted at an estimate of 500 tokens and settled below it after its response (Floodgate: reserve + settle; rate-limiter-flexible: consume + reward; nobody denied)',
};

/** The Markdown tables of an HTTP run, one per shape. */
export function printTables(results: readonly VariantResult[]): string {
  const out: string[] = [];
  for (const shape of [...new Set(results.map((r) => r.shape))]) {
    out.push(`\n#### ${SHAPE_TITLE[shape] ?? shape}\n`);
    out.push(
      markdownTable(
        [
          'framework',
          'limiter',
          'x baseline (reps)',
          'denied',
          'server CPU µs/req (baseline)',
          'busy: server / Redis + load core',
          'Redis CPU µs/req',
          'Redis cmd µs/req',
          'req/s',
          'baseline req/s',
          'p50 / p99 ms',
          'baseline p50 / p99',
          'Redis cmds/req over the wire',
          'in scripts',
          'bytes/client (keys)',
        ],
        results
          .filter((r) => r.shape === shape)
          .map((r) => [
            r.framework,
            r.variant,
            `${fmt(r.ratio, 2)}${r.ratios && r.ratios.length > 1 ? ` (${r.ratios.map((x) => fmt(x, 2)).join(' ')})` : ''}`,
            `${fmt(100 * r.non2xxShare, 1)}%`,
            `${fmt(r.cpuUsPerReq, 0)} (${fmt(r.baseCpuUsPerReq, 0)})`,
            busy(r),
            r.redisCpuUsPerReq === undefined ? '-' : fmt(r.redisCpuUsPerReq, 1),
            r.redisCmdUsPerReq === undefined ? '-' : fmt(r.redisCmdUsPerReq, 1),
            fmt(r.rps),
            fmt(r.baseRps),
            `${fmt(r.p50Ms, 2)} / ${fmt(r.p99Ms, 2)}`,
            `${fmt(r.baseP50Ms, 2)} / ${fmt(r.baseP99Ms, 2)}`,
            wire(r),
            fmt(r.luaPerReq, 2),
            r.bytesPerClient === undefined ? '-' : `${fmt(r.bytesPerClient)} (${fmt(r.keys ?? 0)})`,
          ]),
      ),
    );
  }
  return `${out.join('\n')}\n`;
}
