import { cpus, totalmem } from 'node:os';

/*
 * Which machine a results file was measured on, recorded in its meta when the run ends. The report prints
 * the run's machine, not the one it happens to be regenerated on, and a rerun is merged into a file only
 * from the same kind of machine: rows from two hosts in one table would compare what the hosts differ in.
 */
export interface Host {
  cpus: number;
  /** The CPU model, as the OS names it. */
  cpu: string;
  memGiB: number;
  node: string;
}

export function thisHost(): Host {
  return { cpus: cpus().length, cpu: cpus()[0]?.model.trim() ?? '?', memGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
}

export function describeHost(h: Host): string {
  return `${h.cpus} x ${h.cpu}, ${h.memGiB} GiB, Node ${h.node}`;
}

/** Whether two hosts are the same kind of machine (CPU model and count): runs on them can share a table. */
export function sameHost(a: Host, b: Host): boolean {
  return a.cpu === b.cpu && a.cpus === b.cpus;
}

/**
 * The report's machine line: the machine of each run (HTTP, core) as its results file records it, one line
 * when both name the same; "not recorded" for a file written before runs recorded it.
 */
export function machineLine(runs: { name: string; host: Host | undefined }[]): string {
  const said = runs.map((r) => ({ name: r.name, text: r.host === undefined ? 'not recorded in its results file' : describeHost(r.host) }));
  const alike = said.every((s) => s.text === said[0]?.text);
  const where = alike && said.length > 0 ? said[0]!.text : said.map((s) => `${s.name} run: ${s.text}`).join('; ');
  return `- Machine: ${where}; shared with other jobs (so every figure is a ratio measured back to back in one run; absolute req/s are low and noisy, and differ from one machine to another).`;
}
