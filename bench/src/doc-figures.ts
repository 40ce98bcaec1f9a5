import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreMeta, CoreRow } from './core-table';
import type { VariantResult } from './http/report-tables';
import { fmt, markdownTable } from './lib/stats';

/*
 * The benchmark figures the docs quote, made from bench/results/*.json, so that none is copied by hand.
 * In a doc, a figure stands between `<!-- bench:NAME -->` and `<!-- /bench -->` (invisible once rendered;
 * a table on lines of its own between the two). `npm run bench:report` rewrites every such region of
 * README.md and docs/*.md; test/docs.test.ts fails when one differs from what the results files give, or
 * names a figure this file does not make.
 */
const RESULTS = join(__dirname, '..', 'results');

export interface Results {
  http: { meta: { date: string }; results: VariantResult[] };
  core: { meta: CoreMeta; rows: CoreRow[] };
}

export function readResults(dir = RESULTS): Results {
  const read = <T>(name: string): T => JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as T;
  return { http: read('http'), core: read('core') };
}

const FRAMEWORKS: Record<string, string> = { express: 'Express', fastify: 'Fastify', koa: 'Koa' };
const redisUs = (rs: VariantResult[]): number[] => rs.flatMap((r) => (r.redisCpuUsPerReq === undefined ? [] : [r.redisCpuUsPerReq]));
const range = (values: number[], digits: number, unit: string): string => {
  const lo = fmt(Math.min(...values), digits);
  const hi = fmt(Math.max(...values), digits);
  return lo === hi ? `${lo}${unit}` : `${lo}-${hi}${unit}`;
};

/** Every figure a doc may quote, by name. */
export function figures({ http, core }: Results): Map<string, string> {
  const out = new Map<string, string>();
  const results = http.results;
  const frameworks = [...new Set(results.map((r) => r.framework))];
  const variants = frameworks.flatMap((fw) => [
    ...results.filter((r) => r.framework === fw && r.variant === 'floodgate').slice(0, 1),
    ...results.filter((r) => r.framework === fw && r.variant !== 'floodgate' && r.shape === 'spread'),
  ]);
  const shapes = [...new Set(results.map((r) => r.shape))];
  const ratioOf = (fw: string, variant: string, shape: string): number | undefined =>
    results.find((r) => r.framework === fw && r.variant === variant && r.shape === shape)?.ratio;
  out.set(
    'http-table',
    markdownTable(
      ['shape', ...variants.map((v) => (v.variant === 'floodgate' ? `${FRAMEWORKS[v.framework] ?? v.framework}: Floodgate` : v.variant))],
      shapes.map((shape) => [shape, ...variants.map((v) => fmt(ratioOf(v.framework, v.variant, shape) ?? NaN, 2))]),
    ),
  );
  out.set('http-date', http.meta.date.slice(0, 10));
  const floodgate = (shape: string): VariantResult[] => results.filter((r) => r.variant === 'floodgate' && r.shape === shape);
  out.set('http-spread-redis-us', range(redisUs(floodgate('spread')), 0, ' µs'));
  const peerSpread = results.filter((r) => r.variant !== 'floodgate' && r.shape === 'spread');
  out.set('http-peer-redis-us', range(redisUs(peerSpread), 0, ' µs'));
  const multi = floodgate('multi').flatMap((m) =>
    results.filter((p) => p.framework === m.framework && p.shape === 'multi' && p.variant !== 'floodgate').map((p) => m.ratio / p.ratio),
  );
  out.set('http-multi-vs-peers', range(multi, 2, 'x'));
  // Per result: http-ratio-<framework>-<variant>-<shape> (0.74x), http-cpu-... (server CPU per request),
  // and per multi peer http-multi-<framework>-<peer> (Floodgate's ratio over the peer's: 1.29x).
  const slug = (s: string): string => s.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '');
  for (const r of results) {
    const id = `${r.framework}-${slug(r.variant)}-${r.shape}`;
    out.set(`http-ratio-${id}`, `${fmt(r.ratio, 2)}x`);
    out.set(`http-cpu-${id}`, `${fmt(r.cpuUsPerReq, 0)} µs`);
    const fg = results.find((f) => f.framework === r.framework && f.variant === 'floodgate' && f.shape === 'multi');
    if (r.shape === 'multi' && r.variant !== 'floodgate' && fg)
      out.set(`http-multi-${r.framework}-${slug(r.variant)}`, `${fmt(fg.ratio / r.ratio, 2)}x`);
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
