import type { Host } from '../lib/host';
import { fmt, markdownTable } from '../lib/stats';
import { CONNECTION_BUDGET_MS, type LatencyRow } from './latency';

/** The latency phase's results file (bench/results/latency.json) meta. */
export interface LatencyMeta {
  date: string;
  /** Seconds measured per run, after `warmup` seconds not measured. */
  seconds: number;
  warmup: number;
  reps: number;
  connections: number;
  slowMs: number;
  minutes: number;
  host: Host;
  smoke?: boolean;
}

const ms = (us: number): string => fmt(us / 1000, 2);

/** How many connections the open-loop generator opens (latency.ts, openLoopConnections), in words. */
export const connectionsText = (least: number): string =>
  `a connection per ${CONNECTION_BUDGET_MS} ms of the rate's requests, at least ${least}`;
const signed = (us: number): string => `${us >= 0 ? '+' : ''}${ms(us)}`;

/** What a row's requests cost the server, and how busy its core was, beside the baseline's ('-': not measured). */
const serverCost = (r: LatencyRow): string =>
  r.cpuUsPerReq === undefined || r.baseCpuUsPerReq === undefined || r.serverBusy === undefined || r.baseServerBusy === undefined
    ? '-'
    : `${fmt(r.cpuUsPerReq, 0)}, ${fmt(100 * r.serverBusy, 0)}% (${fmt(r.baseCpuUsPerReq, 0)}, ${fmt(100 * r.baseServerBusy, 0)}%)`;

/** The latency rows as a Markdown table: added latency per framework, limiter and load, beside the baseline's own. */
export function latencyTable(rows: readonly LatencyRow[], meta: Pick<LatencyMeta, 'slowMs'>): string {
  return markdownTable(
    [
      'framework',
      'limiter',
      'Redis',
      'load',
      'added p50 ms',
      'added p99 ms',
      'added p99.9 ms',
      'p99 ms (baseline)',
      'p99.9 ms (baseline)',
      'added p99 per rep',
      'server µs/req, core busy (baseline)',
      'Redis µs/req',
      'denied',
    ],
    rows.map((r) => [
      r.framework,
      r.variant,
      r.redis === 'slow' ? `+${meta.slowMs} ms per reply` : 'loopback',
      `${Math.round(100 * r.load)}% (${fmt(r.rate)}/s)`,
      signed(r.added.p50),
      signed(r.added.p99),
      signed(r.added.p999),
      `${ms(r.run.p99)} (${ms(r.base.p99)})`,
      `${ms(r.run.p999)} (${ms(r.base.p999)})`,
      r.addedP99Reps.map(signed).join(' '),
      serverCost(r),
      r.redisCpuUsPerReq === undefined ? '-' : fmt(r.redisCpuUsPerReq, 1),
      `${fmt(100 * r.non2xxShare, 1)}%${r.errors + r.lost > 0 ? `, ${r.errors} errors, ${r.lost} lost` : ''}`,
    ]),
  );
}

export function printLatencyTable(rows: readonly LatencyRow[], meta: LatencyMeta): string {
  return [
    '',
    `Latency added at a fixed offered rate (open loop, ${meta.reps} rep${meta.reps === 1 ? '' : 's'} of ${meta.seconds} s, ${connectionsText(meta.connections)})${meta.smoke ? ': INDICATIVE (smoke run)' : ''}`,
    latencyTable(rows, meta),
    '',
  ].join('\n');
}
