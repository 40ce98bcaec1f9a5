import type { CoreRow } from './core-table';
import type { VariantResult } from './http/report-tables';
import { fmt, median } from './lib/stats';
import { isHand429 } from './http/shapes';

/* Where each target stands, from bench/results/*.json: RESULTS.md (report.ts) prints it; doc-figures.ts makes it quotable. */
export type Check = [target: string, measured: string, status: string];

export const us = (v: number | undefined): string => (v === undefined ? '-' : fmt(v, 1));

/**
 * A comparison rep by rep: each rep's quotient of two variants' ratios (rep i of every variant of a framework
 * and shape ran in the same round, each right after its own baseline), or one variant's own ratios. Across
 * shapes (3x2 against a peer's equal) the rounds differ, but each ratio is still to its own adjacent baseline.
 */
export interface Paired {
  mid: number;
  lo: number;
  hi: number;
  reps: number[];
}

export function paired(a: VariantResult, b?: VariantResult): Paired {
  const ra = a.ratios ?? [a.ratio];
  const rb = b === undefined ? ra.map(() => 1) : (b.ratios ?? [b.ratio]);
  const reps = ra.length === rb.length ? ra.map((x, i) => x / rb[i]!) : [a.ratio / (b?.ratio ?? 1)];
  return { mid: median(reps), lo: Math.min(...reps), hi: Math.max(...reps), reps };
}

const spread = (q: Paired): string => `${fmt(q.mid, 2)}x${q.reps.length > 1 ? ` (reps ${fmt(q.lo, 2)}-${fmt(q.hi, 2)})` : ''}`;

/**
 * Met when the median reaches the goal. A miss says whether some reps reached it (the run's noise spans
 * the goal: one run cannot tell) or none did.
 */
export function verdict(q: Paired | number, goal: number): string {
  const p = typeof q === 'number' ? { mid: q, reps: [q] } : q;
  const reached = p.reps.filter((x) => x >= goal).length;
  const n = p.reps.length;
  if (p.mid >= goal) return reached < n ? `met (in ${reached} of ${n} reps)` : 'met';
  const by = `missed by ${fmt((1 - p.mid / goal) * 100, 0)}%`;
  if (n === 1) return by;
  return reached > 0 ? `${by} (met in ${reached} of ${n} reps: within the run's noise)` : `${by} (in every rep)`;
}

/** The performance targets, each with its figures and the denied shares: HTTP per framework, then core. */
export function targets(http: readonly VariantResult[], core: readonly CoreRow[]): Check[] {
  const out: Check[] = [];
  const get = (fw: string, shape: string, variant = 'floodgate'): VariantResult | undefined =>
    http.find((r) => r.framework === fw && r.shape === shape && r.variant === variant);
  const peers = (fw: string, shape: string): VariantResult[] =>
    http.filter((r) => r.framework === fw && r.shape === shape && !r.variant.startsWith('floodgate') && !isHand429(r.variant));
  const best = (fw: string, shape: string): VariantResult | undefined => peers(fw, shape).sort((a, b) => b.ratio - a.ratio)[0];
  const denied = (...rs: VariantResult[]): string => rs.map((r) => `${fmt(100 * r.non2xxShare, 1)}%`).join(' / ');
  const added = (r: VariantResult): string => fmt(r.cpuUsPerReq - r.baseCpuUsPerReq, 0);
  const busyOf = (r: VariantResult): string =>
    `server ${r.serverBusy === undefined ? '-' : `${fmt(100 * r.serverBusy, 0)}%`} busy, Redis + load core ${r.loadCoreBusy === undefined ? '-' : `${fmt(100 * r.loadCoreBusy, 0)}%`}`;
  for (const fw of [...new Set(http.map((r) => r.framework))]) {
    const e = get(fw, 'equal');
    const eb = best(fw, 'equal');
    if (e && eb) {
      const mine = e.cpuUsPerReq - e.baseCpuUsPerReq;
      const theirs = eb.cpuUsPerReq - eb.baseCpuUsPerReq;
      out.push([
        `1. ${fw} equal: server CPU added per request <= the best peer's (${eb.variant})`,
        `${fmt(mine, 0)} vs ${fmt(theirs, 0)} µs (server CPU per request ${fmt(e.cpuUsPerReq, 0)} and ${fmt(eb.cpuUsPerReq, 0)}, baselines ${fmt(e.baseCpuUsPerReq, 0)} and ${fmt(eb.baseCpuUsPerReq, 0)})`,
        mine <= theirs ? 'met' : `missed by ${fmt(mine - theirs, 0)} µs`,
      ]);
      const q = paired(e, eb);
      // No limiter runs faster than none: at a best peer above 1/1.15 of baseline the goal asks for more than 1.0.
      const bound = eb.ratio * 1.15 > 1 ? `; 1.15x would need ${fmt(eb.ratio * 1.15, 2)} of baseline, above no limiter at all` : '';
      out.push([
        `2. ${fw} equal (1 x 1): >= 1.0x the best peer (${eb.variant}), 1.15x the goal beyond`,
        `${spread(q)} (${fmt(e.ratio, 2)} vs ${fmt(eb.ratio, 2)} of baseline; denied ${denied(e, eb)})`,
        `${verdict(q, 1)}${q.mid >= 1.15 ? '; goal 1.15x met' : ''}${bound}`,
      ]);
    }
    // The same HTTP work as rate-limiter-flexible's README middleware, which sends no RateLimit headers.
    const off = get(fw, 'equal', 'floodgate:headers-off');
    const rlf = get(fw, 'equal', 'rate-limiter-flexible');
    if (off && rlf)
      out.push([
        `${fw} equal with no headers on either side: Floodgate \`headers: false\` against rate-limiter-flexible (no target; its middleware sends none)`,
        `${spread(paired(off, rlf))} (${fmt(off.ratio, 2)} vs ${fmt(rlf.ratio, 2)}; server CPU added per request ${added(off)} vs ${added(rlf)} µs)`,
        '-',
      ]);
    const t = get(fw, '3x2');
    if (t?.serverBusy !== undefined)
      out.push([`3a. ${fw} 3x2: the server >= 95% busy (not waiting on the round trip)`, busyOf(t), verdict(t.serverBusy, 0.95)]);
    if (t && eb) {
      const q = paired(t, eb);
      out.push([
        `3b. ${fw} 3x2: >= the best peer's 1 x 1 (${eb.variant})`,
        `${spread(q)} (${fmt(t.ratio, 2)} vs ${fmt(eb.ratio, 2)})`,
        verdict(q, 1),
      ]);
    }
    for (const p of t ? peers(fw, '3x2') : []) {
      const q = paired(t!, p);
      out.push([
        `${fw} 3x2 against ${p.variant} stacked 3 x 1 (no target; more work on Floodgate's side)`,
        `${spread(q)} (${fmt(t!.ratio, 2)} vs ${fmt(p.ratio, 2)} of baseline)`,
        '-',
      ]);
    }
    const m = get(fw, 'multi');
    for (const p of m ? peers(fw, 'multi') : [])
      out.push([
        `${fw} multi (3 x 2 both sides): against ${p.variant} (no target; same work, compare denied shares)`,
        `${spread(paired(m!, p))} (${fmt(m!.ratio, 2)} vs ${fmt(p.ratio, 2)}; denied ${denied(m!, p)})`,
        '-',
      ]);
    // A metered request on both sides: Floodgate's reservation and its settle, two script calls per request
    // (its settle below the estimate gives back); rate-limiter-flexible's consume per unit and its reward.
    const s = get(fw, 'settle');
    const sp = get(fw, 'settle', 'rate-limiter-flexible');
    if (s && sp)
      out.push([
        `${fw} settle: against rate-limiter-flexible (no target; same work: reserve + settle below the estimate vs consume + reward; its middleware sends no headers)`,
        `${spread(paired(s, sp))} (${fmt(s.ratio, 2)} vs ${fmt(sp.ratio, 2)}; server CPU added per request ${added(s)} vs ${added(sp)} µs; Redis CPU per request ${us(s.redisCpuUsPerReq)} vs ${us(sp.redisCpuUsPerReq)} µs; denied ${denied(s, sp)})`,
        '-',
      ]);
    const h = get(fw, 'hot');
    const hb = best(fw, 'hot');
    if (h && hb) {
      const q = paired(h, hb);
      out.push([
        `4. ${fw} hot (the denied path): >= the best peer's (${hb.variant})`,
        `${spread(q)} (${fmt(h.ratio, 2)} vs ${fmt(hb.ratio, 2)} of baseline; server CPU per request ${fmt(h.cpuUsPerReq, 0)} vs ${fmt(hb.cpuUsPerReq, 0)} µs; denied ${denied(h, hb)})`,
        verdict(q, 1),
      ]);
    }
    // Floodgate's variants and where each denies: Next.js limits in the proxy (`floodgate`) or around a
    // route handler (`floodgate-route`), each beside a 429 written by hand in the same place.
    for (const [variant, hand429, where] of [
      ['floodgate', '429', ''],
      ['floodgate-route', '429-route', ' (route handler)'],
    ] as const) {
      const fe = get(fw, 'equal', variant);
      const fh = get(fw, 'hot', variant);
      const hand = get(fw, 'hot', hand429);
      if (fh && hand) {
        // A hand-written 429 is what a denial costs the framework itself: the bound for any limiter's denial.
        const q = paired(fh, hand);
        out.push([
          `5. ${fw}${where} hot (the denied path): >= a hand-written 429 in the same place (no limiter, no Redis)`,
          `${spread(q)} (${fmt(fh.ratio, 2)} vs ${fmt(hand.ratio, 2)} of no limiter; server CPU per request ${fmt(fh.cpuUsPerReq, 0)} vs ${fmt(hand.cpuUsPerReq, 0)} µs; denied ${denied(fh, hand)})`,
          verdict(q, 1),
        ]);
      }
      if (fe) {
        const wire = Object.values(fe.wirePerReq).reduce((a, b) => a + b, 0);
        out.push([
          `${fw}${where}: at most 1 Redis command per allowed check (the checks of a turn share batched calls)`,
          `${fmt(wire, 2)} (${Object.keys(fe.wirePerReq).join(', ')})`,
          wire > 0 && wire < 1.02 ? 'met' : 'missed',
        ]);
      }
      if (fh) {
        const wire = Object.values(fh.wirePerReq).reduce((a, b) => a + b, 0);
        out.push([
          `${fw}${where} hot: 0 commands for a cached blocked client`,
          `${fmt(wire, 2)} per request`,
          wire < 0.02 ? 'met' : 'missed',
        ]);
      }
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
