import { ConfigError } from './errors';
import type { ResolvedOptions } from './options';

/*
 * Two limiters with one prefix and name share keys; with different rules or algorithm they would read
 * each other's counters as their own. So, within a process, that is a configuration error.
 */
const live = new Map<string, { signature: string; count: number }>();

function signatureOf(opts: ResolvedOptions): string {
  return `${opts.algorithm.tag}|${opts.rules.map((r) => `${r.limit}/${r.windowMs}/${r.for ?? ''}/${r.burst}/${r.precision}`).join(',')}`;
}

export function register(opts: ResolvedOptions): void {
  const id = `${opts.prefix}:${opts.name}`;
  const signature = signatureOf(opts);
  const entry = live.get(id);
  if (entry === undefined) {
    live.set(id, { signature, count: 1 });
  } else if (entry.signature === signature) {
    entry.count++;
  } else {
    throw new ConfigError(
      'name',
      `'${opts.name}' (prefix '${opts.prefix}') is already used by a limiter with other rules or another algorithm; give each limiter its own name`,
    );
  }
}

export function unregister(opts: ResolvedOptions): void {
  const id = `${opts.prefix}:${opts.name}`;
  const entry = live.get(id);
  if (entry && --entry.count <= 0) live.delete(id);
}
