import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capacityTable, coreTable, type CapacityRow, type CoreMeta, type CoreRow } from './core-table';
import { trpcFigures, updateDocs, type TrpcResult } from './doc-figures';
import { targets, us } from './targets';
import { printTables, type VariantResult } from './http/report-tables';
import { isHand429 } from './http/shapes';
import type { HttpMeta } from './http/merge';
import { describeHost, machineLine, type Host } from './lib/host';
import { fmt, markdownTable } from './lib/stats';
import { renderRatioChart } from './ratio-chart';
import type { LatencyRow } from './http/latency';
import { connectionsText, latencyTable, type LatencyMeta } from './http/latency-table';

/*
 * `npm run bench:report` (and the end of `npm run bench`): bench/results/*.json -> bench/RESULTS.md and
 * docs/benchmarks.svg, with the machine, the versions and where each target of issue 18 stands, and the
 * figures README.md and docs/*.md quote (doc-figures.ts; the tables are in docs/performance.md).
 */
const ROOT = join(__dirname, '..', '..');
const PACKAGES = [
  'express',
  'fastify',
  'koa',
  'hono',
  '@hono/node-server',
  '@nestjs/core',
  '@nestjs/platform-express',
  '@nestjs/platform-fastify',
  'express-rate-limit',
  'rate-limit-redis',
  'rate-limiter-flexible',
  '@fastify/rate-limit',
  'koa-ratelimit',
  'hono-rate-limiter',
  '@nestjs/throttler',
  '@nest-lab/throttler-storage-redis',
  'next',
  'ioredis',
];

/** A package's installed version: bench's own copy (npm may keep one in bench/node_modules), else the root's. */
function version(pkg: string): string {
  const file = [join(ROOT, 'bench', 'node_modules', pkg, 'package.json'), join(ROOT, 'node_modules', pkg, 'package.json')].find((f) =>
    existsSync(f),
  );
  return file ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : '?';
}

function tool(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')[0]!
      .trim();
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? '?')
      .split('\n')[0]!
      .trim();
  }
}

/** `npm run bench:script-cost`: where a check's time inside Redis goes, when it has been run. */
function scriptCost(): string {
  const file = join(__dirname, '..', 'results', 'script-cost.md');
  return existsSync(file) ? `## Redis time per check, step by step\n\n${readFileSync(file, 'utf8').trim()}\n` : '';
}

/** Target 4: Redis µs per check (INFO cpu and commandstats) per algorithm, 1 x 1 and 3x2, beside the peers'. */
function redisPerCheck(http: readonly VariantResult[]): string {
  const rows: string[][] = [];
  for (const fw of [...new Set(http.map((r) => r.framework))])
    for (const variant of [...new Set(http.filter((r) => r.framework === fw && !isHand429(r.variant)).map((r) => r.variant))]) {
      const e = http.find((r) => r.framework === fw && r.shape === 'equal' && r.variant === variant);
      const t = http.find((r) => r.framework === fw && r.shape === '3x2' && r.variant === variant);
      if (!e && !t) continue;
      const label = variant === 'floodgate' ? 'floodgate (sliding-window, default)' : variant.replace('floodgate:', 'floodgate ');
      rows.push([
        fw,
        label,
        us(e?.redisCpuUsPerReq),
        us(e?.redisCmdUsPerReq),
        us(t?.redisCpuUsPerReq),
        us(t?.redisCmdUsPerReq),
        !t ? '-' : t.variant.startsWith('floodgate') ? '3 x 2 in one check' : '3 x 1 stacked',
      ]);
    }
  return markdownTable(
    [
      'framework',
      'limiter',
      'equal: Redis CPU µs/check',
      'equal: commandstats µs',
      '3x2: Redis CPU µs/request',
      '3x2: commandstats µs',
      '3x2 work',
    ],
    rows,
  );
}

/**
 * The A/B runs kept in bench/results/ab/*.json (BENCH_OUT=ab/<name>.json): variants of one change measured
 * interleaved in one run, each rep's ratio shown, so the noise is visible beside the medians.
 */
function abRuns(): string {
  const dir = join(__dirname, '..', 'results', 'ab');
  if (!existsSync(dir)) return '';
  const out = [
    '## A/B runs',
    '',
    'Each kept as `bench/results/ab/<name>.json` (`BENCH_OUT=ab/<name>.json`, or `BENCH_LATENCY_OUT` for the latency phase); `floodgate@<build>` is a snapshot of the packages (`bench/scripts/snapshot-before.sh`) run beside the current build. On a loaded machine the ratios spread widely from rep to rep (in brackets); server and Redis CPU per request are the steadier figures.',
  ];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    // A throughput run (`results`, BENCH_OUT) or a latency phase's (`rows`, BENCH_LATENCY_OUT).
    const run = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
      meta: LatencyMeta & { host?: Host };
      results?: VariantResult[];
      rows?: LatencyRow[];
    };
    const host = run.meta.host === undefined ? '' : `, on ${describeHost(run.meta.host)}`;
    out.push(
      '',
      `### ${file.replace(/\.json$/, '')} (${run.meta.date}, ${run.meta.reps} reps of ${run.meta.seconds} s${host})`,
      // What the run compared, when a note beside it says (ab/<name>.md).
      ...(existsSync(join(dir, file.replace(/\.json$/, '.md')))
        ? ['', readFileSync(join(dir, file.replace(/\.json$/, '.md')), 'utf8').trim()]
        : []),
      run.rows !== undefined ? `\n${latencyTable(run.rows, run.meta)}` : printTables(run.results ?? []),
    );
  }
  return out.join('\n');
}

/** `npm run bench:policies` (results/policies.json): each policy's cost per request next to a plain check. */
function policiesTable(): string {
  const file = join(__dirname, '..', 'results', 'policies.json');
  if (!existsSync(file)) return '';
  const { meta, rows } = JSON.parse(readFileSync(file, 'utf8')) as {
    meta: { date: string; seconds: number; reps: number; concurrency: number; rules: number; identifiers: number };
    rows: { policy: string; perSecond: number; vsPlain: number; redisUsPerRequest: number }[];
  };
  return [
    '## Policies',
    '',
    `\`npm run bench:policies\`, ${meta.date}: ${meta.rules} rules x ${meta.identifiers} identifiers per check, ${meta.concurrency} checks in flight from one process, median of ${meta.reps} runs of ${meta.seconds} s, cases interleaved. Throughput varies by about ±10% between reps here; Redis CPU per request is the steadier figure.`,
    '',
    markdownTable(
      ['policy', 'requests/s', 'vs plain check', 'Redis CPU µs per request'],
      rows.map((r) => [r.policy, fmt(r.perSecond), fmt(r.vsPlain, 2), fmt(r.redisUsPerRequest, 1)]),
    ),
    '',
  ].join('\n');
}

/** `npm run bench:trpc` (results/trpc.json): calls/s with and without the limiter, and Redis script calls per batch. */
function trpcSection(t: TrpcResult): string {
  const f = trpcFigures(t);
  return [
    '## tRPC',
    '',
    `\`npm run bench:trpc\` (${f.get('trpc-setup')!}): tRPC's standalone server and its client in one process, so compare the two lines with each other, not with the HTTP tables.`,
    '',
    f.get('trpc-table')!,
    '',
    f.get('trpc-batch-table')!,
    '',
    `Target: at most 1 Redis call per HTTP request, a batch of N calls included: ${Object.entries(t.redisScriptCallsPerBatch)
      .map(([n, calls]) => `a batch of ${fmt(Number(n))}, ${calls} (${calls <= 1 ? 'met' : 'missed'})`)
      .join('; ')}.`,
    '',
  ].join('\n');
}

function main(): void {
  const httpFile = join(__dirname, '..', 'results', 'http.json');
  const coreFile = join(__dirname, '..', 'results', 'core.json');
  const http = existsSync(httpFile)
    ? (JSON.parse(readFileSync(httpFile, 'utf8')) as {
        meta: HttpMeta;
        results: VariantResult[];
      })
    : undefined;
  const core = existsSync(coreFile)
    ? (JSON.parse(readFileSync(coreFile, 'utf8')) as { meta: CoreMeta; rows: CoreRow[]; capacity?: CapacityRow[] })
    : undefined;
  const latencyFile = join(__dirname, '..', 'results', 'latency.json');
  const latency = existsSync(latencyFile)
    ? (JSON.parse(readFileSync(latencyFile, 'utf8')) as { meta: LatencyMeta; rows: LatencyRow[] })
    : undefined;
  // The Next.js rows, when measured into a file of their own (on another machine than http.json's): they
  // stand in the tables and targets in place of any http.json has, and the machine line names their run.
  const nextFile = join(__dirname, '..', 'results', 'next.json');
  const next = existsSync(nextFile)
    ? (JSON.parse(readFileSync(nextFile, 'utf8')) as { meta: HttpMeta; results: VariantResult[] })
    : undefined;
  const httpRows =
    next === undefined ? (http?.results ?? []) : [...(http?.results ?? []).filter((r) => r.framework !== 'next'), ...next.results];
  const trpcFile = join(__dirname, '..', 'results', 'trpc.json');
  const trpc = existsSync(trpcFile) ? (JSON.parse(readFileSync(trpcFile, 'utf8')) as TrpcResult) : undefined;
  const lines = [
    '# Floodgate benchmarks',
    '',
    'Generated by `npm run bench` (HTTP) and `npm run bench:core` (core) at the repository root; `npm run bench:report` rewrites this file and `docs/benchmarks.svg` from `bench/results/*.json`.',
    '',
    machineLine([
      ...(http ? [{ name: 'HTTP', host: http.meta.host }] : []),
      ...(next ? [{ name: 'HTTP, Next.js rows', host: next.meta.host }] : []),
      ...(core ? [{ name: 'core', host: core.meta.host }] : []),
      ...(latency ? [{ name: 'latency', host: latency.meta.host }] : []),
    ]),
    `- Placement: servers (and the core benchmark's Node) on core 0; Redis and the load generator on core 1 (\`taskset\`).`,
    `- ${tool('redis-server', ['--version'])}; ${tool('wrk', ['-v'])} (as installed where this file was generated).`,
    `- Versions: ${PACKAGES.map((p) => `${p} ${version(p)}`).join(', ')}.`,
    http
      ? `- HTTP run: ${http.meta.date}, ${http.meta.reps} pairs (baseline, then limiter; the variants of a framework and shape interleaved rep by rep) of ${http.meta.seconds} s, ${http.meta.connections} connections, wrk -t1; took ${fmt(http.meta.minutes, 1)} min.`
      : '- HTTP run: none yet.',
    ...(http?.meta.merged ?? []).map((m) => `- Rows rerun into that file (BENCH_MERGE=1): ${m}.`),
    ...(next
      ? [`- Next.js rows: their own run (bench/results/next.json), ${next.meta.date}, ${next.meta.reps} pairs of ${next.meta.seconds} s.`]
      : []),
    core ? `- Core run: ${core.meta.date}.` : '- Core run: none yet.',
    '',
    '## Targets',
    '',
    "Fairness rule: a ratio is compared with a peer's only for the same work (the same rules on the same identifiers) and the same denied share; the share denied on each side is printed beside every comparison. `equal` is 1 rule x 1 identifier on both sides; `3x2` is Floodgate's 3 rules x 2 identifiers in one check against the peers' 3 rules stacked on 1 identifier (more work for Floodgate); `multi` is the same 6 rule-identifier pairs on both sides with real limits (10/s, 120/min, 240/h per client, 10x that per organisation) that the random clients do not reach, so both deny ~0%. `hot` lists a hand-written 429 (no limiter) beside it: the bound for a limiter's denial. `settle` (run only when `BENCH_SHAPES` lists it) is a metered request on both sides, requests and tokens on the client id, counted at an estimate of 500 tokens and settled at 100-399 after the response: Floodgate's reservation and settle against rate-limiter-flexible's consume per unit and reward. Ratios are to the framework with no limiter, measured right before each run.",
    '',
    markdownTable(['target', 'measured', 'status'], targets(httpRows, core?.rows ?? [])),
    '',
    '### Redis per check (target 4)',
    '',
    "Redis CPU: INFO cpu (user + sys) of redis-server per request, which also holds its network syscalls. commandstats: INFO commandstats usec of the commands each request sends over the wire (a script's includes the commands it calls), per request.",
    '',
    http ? redisPerCheck(httpRows) : '',
    '',
    '## HTTP',
    '',
    "Per variant: its ratio to the same framework with no limiter measured right before it (median of the per-pair ratios; each rep's in brackets, which shows the noise), share denied, server CPU per request (process.cpuUsage() of the server over IPC; the baseline's in brackets), how busy the server was (its CPU time over the run's wall time: 100% means it never waited) and how busy the core Redis shares with the load generator was (/proc/stat), Redis CPU per request (INFO cpu) and commandstats µs per request, req/s, Redis commands per request sent over the wire (a MONITOR trace: lines not tagged `lua`), commands run inside scripts, and memory per client (sum of MEMORY USAGE of every key / clients seen).",
    http ? printTables(httpRows) : '',
    latency
      ? `## Latency\n\n${latency.meta.date}: what each limiter adds to a request's latency at a fixed offered rate (open loop: requests due on a schedule, each timed from when it was due), ${latency.meta.reps} reps of ${latency.meta.seconds} s after ${latency.meta.warmup} s of warm-up, ${connectionsText(latency.meta.connections)}, 10,000 random clients, 1 rule x 1 identifier; added = the limiter's percentile minus the framework's own in the same rep (median over reps). The slow Redis answers every reply ${latency.meta.slowMs} ms late.\n\n${latencyTable(latency.rows, latency.meta)}\n`
      : '',
    core ? `## Core\n${coreTable(core.meta, core.rows)}${capacityTable(core.capacity ?? [])}` : '',
    policiesTable(),
    trpc ? trpcSection(trpc) : '',
    scriptCost(),
    abRuns(),
  ];
  writeFileSync(join(__dirname, '..', 'RESULTS.md'), `${lines.join('\n')}\n`);
  if (http) {
    const bars = http.results
      // Floodgate's default variant and the peers (Next.js's route-handler variant stays in the tables).
      .filter((r) => !/[:@+]/.test(r.variant) && !isHand429(r.variant) && (r.variant === 'floodgate' || !r.variant.startsWith('floodgate')))
      .map((r) => ({ shape: r.shape, framework: r.framework, variant: r.variant, ratio: r.ratio }));
    writeFileSync(
      join(ROOT, 'docs', 'benchmarks.svg'),
      renderRatioChart(
        'Throughput with a limiter, as a ratio to the same framework without one',
        `median of ${http.meta.reps} back-to-back pairs, ${http.meta.date.slice(0, 10)}; higher is better`,
        bars,
      ),
    );
  }
  // The figures README.md and docs/*.md quote (<!-- bench:NAME --> regions), when both runs are there.
  const docs = http && core ? updateDocs(ROOT, { http, core, ...(latency ? { latency } : {}), ...(trpc ? { trpc } : {}) }) : [];
  process.stdout.write(
    `wrote bench/RESULTS.md and docs/benchmarks.svg${docs.length > 0 ? `, and the figures in ${docs.join(', ')}` : ''}\n`,
  );
}

main();
