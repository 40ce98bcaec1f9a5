import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capacityMarkdown, type CapacityRow, type CoreMeta, type CoreRow } from './core-table';
import type { VariantResult } from './http/report-tables';
import type { LatencyRow } from './http/latency';
import { latencyTable, type LatencyMeta } from './http/latency-table';
import { fmt, markdownTable } from './lib/stats';
import { targets } from './targets';
import { isHand429 } from './http/shapes';
import type { HttpMeta } from './http/merge';
import { describeHost, type Host } from './lib/host';

/*
 * The benchmark figures the docs quote, made from bench/results/*.json, so that none is copied by hand.
 * In a doc, a figure stands between `<!-- bench:NAME -->` and `<!-- /bench -->` (invisible once rendered;
 * a table on lines of its own between the two). `npm run bench:report` rewrites every such region of
 * README.md and docs/*.md (the HTTP and core tables stand in docs/performance.md, single figures in the
 * README's comparison and elsewhere); test/docs.test.ts fails when one differs from what the results files
 * give, or names a figure this file does not make.
 */
const RESULTS = join(__dirname, '..', 'results');

export interface Results {
  http: { meta: { date: string }; results: VariantResult[] };
  core: { meta: CoreMeta; rows: CoreRow[]; capacity?: CapacityRow[] };
  /** The latency phase of `npm run bench` (results/latency.json), once it has run. */
  latency?: { meta: LatencyMeta; rows: LatencyRow[] };
  /** `npm run bench:trpc` (results/trpc.json), once it has run. */
  trpc?: TrpcResult;
  /**
   * The Next.js rows of `npm run bench` in a file of their own (results/next.json, `BENCH_FRAMEWORKS=next
   * BENCH_OUT=next.json`), when they were measured apart from http.json (on another machine, which a merge
   * into it refuses); the Next.js table reads it before http.json's rows.
   */
  next?: { meta: HttpMeta; results: VariantResult[] };
}

/** What `npm run bench:trpc` writes (bench/src/trpc.ts). */
export interface TrpcResult {
  /** When it ran (runs before this field existed have none). */
  date?: string;
  seconds: number;
  batch: number;
  clients: number;
  callsPerSecond: { noLimiter: number; floodgate: number };
  /** Redis script calls (EVALSHA, EVAL) one batch of N calls took, by N. */
  redisScriptCallsPerBatch: Record<string, number>;
}

export function readResults(dir = RESULTS): Results {
  const read = <T>(name: string): T => JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as T;
  return {
    http: read('http'),
    core: read('core'),
    ...(existsSync(join(dir, 'latency.json')) ? { latency: read<NonNullable<Results['latency']>>('latency') } : {}),
    ...(existsSync(join(dir, 'trpc.json')) ? { trpc: read<TrpcResult>('trpc') } : {}),
    ...(existsSync(join(dir, 'next.json')) ? { next: read<NonNullable<Results['next']>>('next') } : {}),
  };
}

const FRAMEWORKS: Record<string, string> = {
  express: 'Express',
  fastify: 'Fastify',
  koa: 'Koa',
  hono: 'Hono',
  'nestjs-express': 'NestJS (Express)',
  'nestjs-fastify': 'NestJS (Fastify)',
  next: 'Next.js',
};
const range = (values: number[], digits: number, unit: string): string => {
  const lo = fmt(Math.min(...values), digits);
  const hi = fmt(Math.max(...values), digits);
  return lo === hi ? `${lo}${unit}` : `${lo}-${hi}${unit}`;
};

/** Every figure a doc may quote, by name. */
export function figures({ http, core, latency, trpc, next }: Results): Map<string, string> {
  const out = new Map<string, string>();
  if (latency !== undefined) latencyFigures(latency, out);
  if (trpc !== undefined) for (const [k, v] of trpcFigures(trpc)) out.set(k, v);
  nextFigures(next ?? http, out);
  if (core.capacity !== undefined && core.capacity.length > 0) {
    out.set('core-capacity-table', capacityMarkdown(core.capacity));
    for (const c of core.capacity) {
      out.set(`core-capacity-redis-${c.algorithm}-${c.shape}`, fmt(Math.round(1e6 / c.redisUsPerCheck / 1000) * 1000));
      out.set(`core-capacity-node-${c.algorithm}-${c.shape}`, fmt(Math.round(1e6 / c.nodeUsPerCheck / 1000) * 1000));
    }
  }
  const results = http.results;
  const frameworks = [...new Set(results.map((r) => r.framework))];
  // One column per framework's Floodgate (default algorithm) and per peer; the hand-written 429 and the
  // A/B variants (floodgate:algorithm, floodgate@build, floodgate+autopipeline) stay in RESULTS.md.
  const columns = frameworks.flatMap((fw) => [
    { framework: fw, variant: 'floodgate' },
    ...[
      ...new Set(
        results.filter((r) => r.framework === fw && !r.variant.startsWith('floodgate') && !isHand429(r.variant)).map((r) => r.variant),
      ),
    ].map((variant) => ({ framework: fw, variant })),
  ]);
  // A peer that runs on several frameworks (rate-limiter-flexible in the settle shape) names its framework.
  const shared = (variant: string): boolean => columns.filter((c) => c.variant === variant).length > 1;
  const label = (c: { framework: string; variant: string }): string =>
    c.variant === 'floodgate' || shared(c.variant)
      ? `${FRAMEWORKS[c.framework] ?? c.framework}: ${c.variant === 'floodgate' ? 'Floodgate' : c.variant}`
      : c.variant;
  const shapes = [...new Set(results.map((r) => r.shape))];
  const resultOf = (fw: string, variant: string, shape: string): VariantResult | undefined =>
    results.find((r) => r.framework === fw && r.variant === variant && r.shape === shape);
  const cell = (r: VariantResult | undefined): string => (r === undefined ? '-' : `${fmt(r.ratio, 2)} (${fmt(100 * r.non2xxShare, 0)}%)`);
  out.set(
    'http-table',
    markdownTable(
      ['shape', ...columns.map(label)],
      shapes.map((shape) => [shape, ...columns.map((c) => cell(resultOf(c.framework, c.variant, shape)))]),
    ),
  );
  out.set('http-date', http.meta.date.slice(0, 10));
  out.set('http-targets', markdownTable(['target', 'measured', 'status'], targets(results, core.rows)));
  const slug = (s: string): string => s.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '');
  // Per result: http-ratio-<framework>-<variant>-<shape> (0.74x), http-cpu-... (server CPU per request),
  // http-redis-... (Redis CPU per request).
  for (const r of results) {
    const id = `${r.framework}-${slug(r.variant)}-${r.shape}`;
    out.set(`http-ratio-${id}`, `${fmt(r.ratio, 2)}x`);
    out.set(`http-cpu-${id}`, `${fmt(r.cpuUsPerReq, 0)} µs`);
    if (r.redisCpuUsPerReq !== undefined) out.set(`http-redis-${id}`, `${fmt(r.redisCpuUsPerReq, 1)} µs`);
  }

  const rows = core.rows;
  out.set(
    'core-table',
    markdownTable(
      [
        'algorithm',
        'Redis CPU per check',
        '`check()` at 256 in flight',
        "share of redis-benchmark's rate for the same script",
        'memory per identifier',
      ],
      rows.map((r) => [
        r.algorithm === 'sliding-window' ? 'sliding-window (default)' : r.algorithm,
        r.scriptUs === undefined ? 'n/a' : `${fmt(r.scriptUs, 0)} µs`,
        `${fmt(r.c256)}/s`,
        `${fmt(r.ratio256 * 100, 0)}%`,
        `${fmt(r.memoryUsage)} B`,
      ]),
    ),
  );
  out.set('core-date', core.meta.date.slice(0, 10));
  out.set(
    'core-ceiling-share',
    range(
      rows.map((r) => r.ratio256 * 100),
      0,
      '%',
    ),
  );
  for (const r of rows) {
    if (r.scriptUs !== undefined) out.set(`core-us-${r.algorithm}`, `${fmt(r.scriptUs, 0)} µs`);
    out.set(`core-memory-${r.algorithm}`, `${fmt(r.memoryUsage)} B`);
  }
  return out;
}

/**
 * The latency phase's figures: latency-table, latency-date, latency-p99-<framework>-<variant>-<load %>
 * (added p99, signed ms, on the loopback Redis), latency-busy-<framework>-<variant>-<load %> (how busy the
 * server's core was; latency-base-busy-... the baseline's in the same reps) and latency-slow-p999-<framework>-<variant>
 * (the p99.9 a request took, whole, against the slow Redis).
 */
function latencyFigures({ meta, rows }: NonNullable<Results['latency']>, out: Map<string, string>): void {
  const slug = (s: string): string => s.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '');
  const ms = (us: number): string => `${us >= 0 ? '+' : ''}${fmt(us / 1000, 2)} ms`;
  out.set('latency-table', latencyTable(rows, meta));
  out.set('latency-date', meta.date.slice(0, 10));
  out.set('latency-slow-ms', `${meta.slowMs} ms`);
  for (const r of rows) {
    const id = `${r.framework}-${slug(r.variant)}`;
    const load = Math.round(100 * r.load);
    if (r.redis === 'loopback') {
      out.set(`latency-p99-${id}-${load}`, ms(r.added.p99));
      if (r.serverBusy !== undefined) out.set(`latency-busy-${id}-${load}`, `${fmt(100 * r.serverBusy)}%`);
      if (r.baseServerBusy !== undefined) out.set(`latency-base-busy-${id}-${load}`, `${fmt(100 * r.baseServerBusy)}%`);
    } else out.set(`latency-slow-p999-${id}`, `${fmt(r.run.p999 / 1000, 2)} ms`);
  }
}

/** The Next.js variants of `npm run bench` (bench/src/http/apps-next.ts), as the docs name them. */
const NEXT_VARIANTS: [variant: string, label: string][] = [
  ['floodgate', 'Floodgate in the proxy (`rateLimit()`)'],
  ['floodgate-route', 'Floodgate around the route handler (`routeRateLimit()`)'],
  ['429', 'a hand-written 429 in the proxy, no limiter'],
  ['429-route', 'a hand-written 429 in the route handler, no limiter'],
];

/**
 * next-table: every Next.js row of the HTTP run, each limiter's throughput against the same app with no
 * limiter, its denied share, server CPU and Redis commands per request (a run without Next.js says so).
 */
function nextFigures(
  { meta, results }: { meta: { date: string; host?: Host; merged?: string[] }; results: readonly VariantResult[] },
  out: Map<string, string>,
): void {
  const rows = results.filter((r) => r.framework === 'next');
  if (rows.length === 0) {
    out.set('next-table', 'Not measured in the latest run: `BENCH_FRAMEWORKS=next BENCH_MERGE=1 npm run bench` adds its rows to it.');
    out.set('next-setup', 'not measured yet');
    return;
  }
  // When the rows were rerun into the file (BENCH_MERGE=1), the date of that rerun, not the file's.
  const rerun = meta.merged?.filter((m) => /(: |, )next /.test(m)).at(-1);
  const date = (rerun ?? meta.date).slice(0, 10);
  out.set('next-setup', `${date}, ${meta.host === undefined ? 'machine not recorded' : describeHost(meta.host)}`);
  const order = (r: VariantResult): number => NEXT_VARIANTS.findIndex(([v]) => v === r.variant);
  const wire = (r: VariantResult): number => Object.values(r.wirePerReq).reduce((a, b) => a + b, 0);
  out.set(
    'next-table',
    markdownTable(
      ['shape', 'server', 'x no limiter', 'denied', 'server CPU µs/request (no limiter)', 'Redis commands/request'],
      [...new Set(rows.map((r) => r.shape))].flatMap((shape) =>
        rows
          .filter((r) => r.shape === shape && order(r) >= 0)
          .sort((a, b) => order(a) - order(b))
          .map((r) => [
            shape,
            NEXT_VARIANTS[order(r)]![1],
            fmt(r.ratio, 2),
            `${fmt(100 * r.non2xxShare, 0)}%`,
            `${fmt(r.cpuUsPerReq, 0)} (${fmt(r.baseCpuUsPerReq, 0)})`,
            fmt(wire(r), 2),
          ]),
      ),
    ),
  );
}

/**
 * `npm run bench:trpc`'s figures: trpc-table (calls/s with no limiter and with @floodgate/trpc),
 * trpc-batch-table and trpc-batch-<N> (the Redis script calls a batch of N calls took), trpc-ratio.
 */
export function trpcFigures(t: TrpcResult): Map<string, string> {
  const out = new Map<string, string>();
  const { noLimiter, floodgate } = t.callsPerSecond;
  out.set(
    'trpc-table',
    markdownTable(
      ['server', 'calls/s', 'of no limiter'],
      [
        ['tRPC, no limiter', fmt(noLimiter), '1'],
        ['tRPC + `@floodgate/trpc`', fmt(floodgate), fmt(floodgate / noLimiter, 2)],
      ],
    ),
  );
  out.set('trpc-ratio', `${fmt(floodgate / noLimiter, 2)}x`);
  const sizes = Object.keys(t.redisScriptCallsPerBatch).sort((a, b) => Number(a) - Number(b));
  out.set(
    'trpc-batch-table',
    markdownTable(
      ['calls in one batch', ...sizes.map((n) => fmt(Number(n)))],
      [['Redis script calls', ...sizes.map((n) => fmt(t.redisScriptCallsPerBatch[n]!))]],
    ),
  );
  for (const n of sizes) out.set(`trpc-batch-${n}`, fmt(t.redisScriptCallsPerBatch[n]!));
  out.set(
    'trpc-setup',
    `${t.clients} clients, batches of ${t.batch} calls, ${t.seconds} s per measurement${t.date === undefined ? '' : `, ${t.date.slice(0, 10)}`}`,
  );
  return out;
}

const REGION = /<!-- bench:([a-z0-9-]+) -->([\s\S]*?)<!-- \/bench -->/g;

/** `text` with every figure region set from `values`; `unknown` collects the names `values` lacks. */
export function applyFigures(text: string, values: Map<string, string>, unknown: string[] = []): string {
  return text.replace(REGION, (whole, name: string, current: string) => {
    const value = values.get(name);
    if (value === undefined) {
      unknown.push(name);
      return whole;
    }
    const block = current.startsWith('\n');
    return `<!-- bench:${name} -->${block ? `\n${value}\n` : value}<!-- /bench -->`;
  });
}

/** The docs that may quote figures: README.md and docs/*.md (paths from the repository root). */
export function figureDocs(root: string): string[] {
  return [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f)),
  ];
}

/** Rewrites the figure regions of every doc from `results`; returns the docs it changed. Throws on an unknown name. */
export function updateDocs(root: string, results: Results): string[] {
  const values = figures(results);
  const changed: string[] = [];
  for (const doc of figureDocs(root)) {
    const text = readFileSync(join(root, doc), 'utf8');
    const unknown: string[] = [];
    const next = applyFigures(text, values, unknown);
    if (unknown.length > 0) throw new Error(`${doc} quotes figures no results file makes: ${unknown.join(', ')}`);
    if (next !== text) {
      writeFileSync(join(root, doc), next);
      changed.push(doc);
    }
  }
  return changed;
}
