import type { CoreRow } from './core-table';
import type { VariantResult } from './http/report-tables';
import { fmt } from './lib/stats';

/* Where each target stands, from bench/results/*.json: RESULTS.md (report.ts) and README.md (doc-figures.ts) print it. */
export type Check = [target: string, measured: string, status: string];

export const us = (v: number | undefined): string => (v === undefined ? '-' : fmt(v, 1));

/** The targets of issue 18 (and the standing ones of issue 7), each with its figures and the denied shares. */
export function targets(http: readonly VariantResult[], core: readonly CoreRow[]): Check[] {
  const out: Check[] = [];
  const get = (fw: string, shape: string, variant = 'floodgate'): VariantResult | undefined =>
    http.find((r) => r.framework === fw && r.shape === shape && r.variant === variant);
  const peers = (fw: string, shape: string): VariantResult[] =>
    http.filter((r) => r.framework === fw && r.shape === shape && !r.variant.startsWith('floodgate') && r.variant !== '429');
  const best = (fw: string, shape: string): VariantResult | undefined => peers(fw, shape).sort((a, b) => b.ratio - a.ratio)[0];
  const verdict = (value: number, goal: number): string => (value >= goal ? 'met' : `missed by ${fmt((1 - value / goal) * 100, 0)}%`);
  const denied = (...rs: VariantResult[]): string => rs.map((r) => `${fmt(100 * r.non2xxShare, 1)}%`).join(' / ');
  for (const fw of [...new Set(http.map((r) => r.framework))]) {
    const e = get(fw, 'equal');
    const eb = best(fw, 'equal');
    if (e && eb)
      out.push([
        `1. ${fw} equal (1 x 1): >= 1.15x the best peer (${eb.variant})`,
        `${fmt(e.ratio / eb.ratio, 2)}x (${fmt(e.ratio, 2)} vs ${fmt(eb.ratio, 2)} of baseline; denied ${denied(e, eb)})`,
        verdict(e.ratio / eb.ratio, 1.15),
      ]);
    const t = get(fw, '3x2');
    if (t && eb)
      out.push([
        `2a. ${fw} 3x2: >= the best peer's 1 x 1 (${eb.variant})`,
        `${fmt(t.ratio / eb.ratio, 2)}x (${fmt(t.ratio, 2)} vs ${fmt(eb.ratio, 2)})`,
        verdict(t.ratio / eb.ratio, 1),
      ]);
    for (const p of t ? peers(fw, '3x2') : [])
      out.push([
        `2b. ${fw} 3x2: >= 1.5x ${p.variant} stacked 3 x 1${fw === 'express' ? '' : ' (the issue asks it on Express)'}`,
        `${fmt(t!.ratio / p.ratio, 2)}x (${fmt(t!.ratio, 2)} vs ${fmt(p.ratio, 2)} of baseline)`,
        verdict(t!.ratio / p.ratio, 1.5),
      ]);
    const m = get(fw, 'multi');
    for (const p of m ? peers(fw, 'multi') : [])
      out.push([
        `${fw} multi (3 x 2 both sides): against ${p.variant} (no target; same work, compare denied shares)`,
        `${fmt(m!.ratio / p.ratio, 2)}x (${fmt(m!.ratio, 2)} vs ${fmt(p.ratio, 2)}; denied ${denied(m!, p)})`,
        '-',
      ]);
    const h = get(fw, 'hot');
    const hand = get(fw, 'hot', '429');
    if (h)
      out.push([
        `3. ${fw} hot: >= 0.95x no limiter`,
        `${fmt(h.ratio, 2)}x${hand ? ` (a hand-written 429: ${fmt(hand.ratio, 2)}x)` : ''}`,
        verdict(h.ratio, 0.95),
      ]);
    if (e) {
      const wire = Object.values(e.wirePerReq).reduce((a, b) => a + b, 0);
      out.push([
        `${fw}: at most 1 Redis command per allowed check (the checks of a turn share batched calls)`,
        `${fmt(wire, 2)} (${Object.keys(e.wirePerReq).join(', ')})`,
        wire > 0 && wire < 1.02 ? 'met' : 'missed',
      ]);
    }
    if (h) {
      const wire = Object.values(h.wirePerReq).reduce((a, b) => a + b, 0);
      out.push([`${fw} hot: 0 commands for a cached blocked client`, `${fmt(wire, 2)} per request`, wire < 0.02 ? 'met' : 'missed']);
    }
  }
  for (const r of core)
    out.push([`core ${r.algorithm}: c=256 >= 50% of the EVALSHA ceiling`, `${fmt(r.ratio256 * 100, 0)}%`, verdict(r.ratio256, 0.5)]);
  const mem = (a: string): CoreRow | undefined => core.find((r) => r.algorithm === a);
  const fw = mem('fixed-window');
  const sw = mem('sliding-window');
  if (fw)
    out.push([
      'memory, fixed-window, 3 rules: <= 150 B',
      `${fmt(fw.memoryUsage)} B`,
      fw.memoryUsage <= 150 ? 'met' : `missed by ${fmt(fw.memoryUsage - 150)} B`,
    ]);
  if (sw)
    out.push([
      'memory, sliding-window, 3 rules: <= 400 B',
      `${fmt(sw.memoryUsage)} B`,
      sw.memoryUsage <= 400 ? 'met' : `missed by ${fmt(sw.memoryUsage - 400)} B`,
    ]);
  return out;
}
