import type Redis from 'ioredis';
import { createConcurrencyLimiter, createLimiter } from '@floodgate/core';
import type { BenchRedis } from './lib/machine';
import { fmt, markdownTable, median } from './lib/stats';

/*
 * The cost of a concurrency lease per request (docs/concurrency.md) next to a plain check, in the core
 * benchmark: `lease([ip, user])` then `release()` (two scripts) against `check([ip, user])` of 3 rules
 * (one script), for clients drawn at random from 10,000 so nothing is ever denied. Per variant, at 1 and
 * 64 requests in flight: requests per second, and Redis CPU per request (INFO commandstats usec of EVALSHA
 * and EVAL over the run / requests). Each rep runs both variants back to back; medians over the reps.
 */
const CLIENTS = 10_000;
const IDS: [string, string][] = Array.from({ length: CLIENTS }, (_, c) => [`ip:10.1.${c >> 8}.${c & 255}`, `user:l${c}`]);
const LIMITS = [
  { limit: 1_000, window: '1s' },
  { limit: 1_000, window: '1m' },
  { limit: 1_000, window: '1h' },
];

export interface LeaseRow {
  variant: string;
  concurrency: number;
  perSecond: number;
  redisUs: number;
}

function scriptUsec(r: BenchRedis): number {
  const info = r.cli('INFO', 'commandstats');
  let usec = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=\d+,usec=(\d+)/gm)) usec += Number(m[1]);
  return usec;
}

async function run(r: BenchRedis, concurrency: number, seconds: number, request: (ids: [string, string]) => Promise<void>) {
  r.cli('CONFIG', 'RESETSTAT');
  const deadline = Date.now() + seconds * 1000;
  let requests = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      requests++;
      await request(IDS[(Math.random() * CLIENTS) | 0]!);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  return { perSecond: requests / elapsed, redisUs: scriptUsec(r) / requests };
}

export async function leaseRows(redis: Redis, r: BenchRedis, seconds: number, reps: number): Promise<LeaseRow[]> {
  const check = createLimiter({ redis, name: 'lease-bench-check', prefix: 'bench', limits: LIMITS, timeoutMs: 2_000 });
  const leases = createConcurrencyLimiter({ redis, name: 'lease-bench', prefix: 'bench', max: 1_000, timeoutMs: 2_000 });
  let bad = 0;
  const variants: [string, (ids: [string, string]) => Promise<void>][] = [
    [
      'check (3 rules)',
      async (ids) => {
        if (!(await check.check(ids)).allowed) bad++;
      },
    ],
    [
      'lease + release',
      async (ids) => {
        const lease = await leases.lease(ids);
        if (!lease.granted || lease.source !== 'redis' || !(await lease.release())) bad++;
      },
    ],
  ];
  const samples = new Map<string, { perSecond: number[]; redisUs: number[] }>();
  for (const [, fn] of variants) await run(r, 16, 0.5, fn); // warm-up: JIT, script load
  for (let rep = 0; rep < reps; rep++) {
    for (const c of [1, 64]) {
      for (const [name, fn] of variants) {
        const s = await run(r, c, seconds, fn);
        const key = `${name}|${c}`;
        const into = samples.get(key) ?? { perSecond: [], redisUs: [] };
        into.perSecond.push(s.perSecond);
        into.redisUs.push(s.redisUs);
        samples.set(key, into);
        process.stderr.write(`lease bench rep ${rep + 1}: ${name} c=${c}: ${fmt(s.perSecond)}/s, ${fmt(s.redisUs, 1)} µs Redis\n`);
      }
    }
  }
  await check.close();
  await leases.close();
  if (bad > 0) throw new Error(`lease bench: ${bad} requests were denied, not from Redis, or not released`);
  return [...samples].map(([key, s]) => {
    const [variant, c] = key.split('|');
    return { variant: variant!, concurrency: Number(c), perSecond: median(s.perSecond), redisUs: median(s.redisUs) };
  });
}

export function leaseTable(rows: readonly LeaseRow[]): string {
  return [
    '\n### Core: a concurrency lease per request next to a plain check (2 identifiers, 10,000 clients, never denied)\n',
    'lease + release is two scripts per request (acquire, release); Redis µs / request: INFO commandstats usec of EVALSHA + EVAL over the run.\n',
    markdownTable(
      ['variant', 'in flight', 'requests/s', 'Redis µs / request'],
      rows.map((r) => [r.variant, String(r.concurrency), fmt(r.perSecond), fmt(r.redisUs, 1)]),
    ),
    '',
  ].join('\n');
}
