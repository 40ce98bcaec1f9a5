import type { Host } from './lib/host';
import { fmt, markdownTable } from './lib/stats';

/** One algorithm's line of `npm run bench:core` (medians over the reps; ratios per rep). */
export interface CoreRow {
  algorithm: string;
  c1: number;
  ceiling1: number;
  ratio1: number;
  c64: number;
  c256: number;
  ceilingFull: number;
  ratio256: number;
  memoryUsage: number;
  usedMemory: number;
  /** Redis CPU per check inside the script (INFO commandstats usec_per_call, saturated ceiling run). */
  scriptUs?: number;
}

export interface CoreMeta {
  date: string;
  seconds: number;
  reps: number;
  redisVersion: string;
  node: string;
  autoPipelining: boolean;
  serverCore: number;
  loadCore: number;
  /** The machine of the run (files written before it was recorded have none). */
  host?: Host;
}

export function coreTable(meta: CoreMeta, rows: readonly CoreRow[]): string {
  return [
    `\n### Core: limiter.check(), 3 rules x 2 identifiers, 10,000 clients (decisions/s, median of ${meta.reps} x ${meta.seconds} s)\n`,
    `Redis ${meta.redisVersion} on core ${meta.loadCore}; Node ${meta.node} and redis-benchmark on core ${meta.serverCore}; ioredis enableAutoPipelining: ${meta.autoPipelining}.`,
    'Ceilings: redis-benchmark sending the same EVALSHA (same script, 4 keys, same ARGV) with -c 1 -P 1 (one in flight, as c=1)',
    'and -c 50 -P 16 (Redis saturated); Redis µs / check: INFO commandstats usec_per_call of EVALSHA in that run. Memory: the 3 multi rules (10/s, 120/min, 240/h), 1,000 identifiers, 5 checks each.\n',
    markdownTable(
      [
        'algorithm',
        'c=1',
        'ceiling -c1 -P1',
        'c=1 / ceiling',
        'c=64',
        'c=256',
        'ceiling -c50 -P16',
        'c=256 / ceiling',
        'Redis µs / check',
        'MEMORY USAGE / identifier',
        'used_memory / identifier',
      ],
      rows.map((r) => [
        r.algorithm,
        fmt(r.c1),
        fmt(r.ceiling1),
        fmt(r.ratio1, 2),
        fmt(r.c64),
        fmt(r.c256),
        fmt(r.ceilingFull),
        fmt(r.ratio256, 2),
        r.scriptUs === undefined ? '-' : fmt(r.scriptUs, 1),
        `${fmt(r.memoryUsage)} B`,
        `${fmt(r.usedMemory)} B`,
      ]),
    ),
    '',
  ].join('\n');
}

/**
 * One algorithm and shape at 256 checks in flight from one process: the CPU a check takes in Redis (INFO cpu,
 * its network work included) and in the checking process, so checks/s per core is 1e6 / µs per check.
 */
export interface CapacityRow {
  algorithm: string;
  shape: '1x1' | '3x2';
  rate: number;
  redisUsPerCheck: number;
  nodeUsPerCheck: number;
}

/** Checks per second one Redis core and one Node process can carry, per algorithm and shape. */
export function capacityMarkdown(rows: readonly CapacityRow[]): string {
  return markdownTable(
    [
      'algorithm',
      'rules x identifiers',
      'Redis CPU per check',
      'checks/s per Redis core',
      'Node CPU per check',
      'checks/s per Node process',
    ],
    rows.map((r) => [
      r.algorithm,
      r.shape.replace('x', ' x '),
      `${fmt(r.redisUsPerCheck, 1)} µs`,
      fmt(Math.round(1e6 / r.redisUsPerCheck / 1000) * 1000),
      `${fmt(r.nodeUsPerCheck, 1)} µs`,
      fmt(Math.round(1e6 / r.nodeUsPerCheck / 1000) * 1000),
    ]),
  );
}

export function capacityTable(rows: readonly CapacityRow[]): string {
  if (rows.length === 0) return '';
  return [
    '\n### Capacity: CPU per check at 256 in flight from one process (Redis: INFO cpu; Node: process.cpuUsage())\n',
    capacityMarkdown(rows),
    '',
  ].join('\n');
}
