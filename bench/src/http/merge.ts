import { describeHost, sameHost, type Host } from '../lib/host';
import type { VariantResult } from './report-tables';

/** An HTTP results file's meta (bench/results/http.json). */
export interface HttpMeta {
  date: string;
  seconds: number;
  connections: number;
  reps: number;
  minutes: number;
  /** The machine the run was measured on (files written before it was recorded have none). */
  host?: Host;
  /** The reruns merged into the file (BENCH_MERGE=1), each with when and which rows. */
  merged?: string[];
}

/** Why a run on `host` may not be merged into a file measured on `was`, if it may not (see mergeRun). */
export function mergeRefusal(was: Host | undefined, host: Host): string | undefined {
  if (was !== undefined && sameHost(was, host)) return undefined;
  return (
    `BENCH_MERGE=1: the file was measured on ${was === undefined ? 'a machine it does not record' : describeHost(was)}, ` +
    `this run on ${describeHost(host)}; rows from two machines do not share a table. Rerun every row here, ` +
    'or write this run to a file of its own (BENCH_OUT).'
  );
}

/**
 * BENCH_MERGE=1: the rerun's rows replace the file's rows of the same framework, shape and variant, the
 * others stay; `order` puts them back where a full run puts them. The file's run stays what its header
 * describes (date, length, machine) and the rerun is listed as merged. A rerun on another kind of machine,
 * or into a file that does not say which machine measured it, is refused: its rows would sit beside rows
 * from another host.
 */
export function mergeRun(
  before: { meta: HttpMeta; results: VariantResult[] },
  fresh: { meta: HttpMeta & { host: Host }; results: VariantResult[] },
  rank: (r: VariantResult) => number,
): { meta: HttpMeta; results: VariantResult[] } {
  const was = before.meta.host;
  const refused = mergeRefusal(was, fresh.meta.host);
  if (refused !== undefined) throw new Error(refused);
  const key = (r: VariantResult): string => `${r.framework} ${r.shape} ${r.variant}`;
  const rerun = new Set(fresh.results.map(key));
  const results = [...before.results.filter((r) => !rerun.has(key(r))), ...fresh.results].sort((a, b) => rank(a) - rank(b));
  const meta: HttpMeta = {
    ...fresh.meta,
    date: before.meta.date,
    minutes: before.meta.minutes,
    host: was,
    merged: [...(before.meta.merged ?? []), `${fresh.meta.date}: ${[...rerun].join(', ')}`],
  };
  return { meta, results };
}
