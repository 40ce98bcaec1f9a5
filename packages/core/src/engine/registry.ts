import { ConfigError } from '../kernel/errors';
import type { ResolvedOptions } from './options';
import { shared } from '../kernel/state';

/*
 * Two limiters with one prefix and name share keys; with different rules or algorithm they would read
 * each other's counters as their own. So, within a process, that is a configuration error.
 */
const live = shared('limiterNames', () => new Map<string, { signature: string; count: number }>());

function signatureOf(opts: ResolvedOptions): string {
  const rules = (plan: ResolvedOptions['plans'][number]): string =>
    plan.rules.map((r) => `${r.limit}/${r.windowMs}/${r.for ?? ''}/${r.burst}/${r.precision}`).join(',');
  return `${opts.algorithm.tag}|${opts.plans.map((p) => `${p.name}=${rules(p)}`).join(';')}`;
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

/**
 * A limiter that is collected without close() (one built per request, a hot reload) frees its name here,
 * so the registry neither leaks nor keeps refusing the name (docs/security.md, "Unbounded memory").
 */
const collected = shared('limiterNames.collected', () => new FinalizationRegistry<ResolvedOptions>((opts) => unregister(opts)));

/** Registers `limiter`'s name until close() (unregister) or until the limiter is garbage collected. */
export function registerLimiter(limiter: object, opts: ResolvedOptions): void {
  register(opts);
  collected.register(limiter, opts, limiter);
}

export function unregisterLimiter(limiter: object, opts: ResolvedOptions): void {
  if (collected.unregister(limiter)) unregister(opts);
}

/** Names in use (for tests). */
export function registeredNames(): number {
  return live.size;
}

export function unregister(opts: ResolvedOptions): void {
  const id = `${opts.prefix}:${opts.name}`;
  const entry = live.get(id);
  if (entry && --entry.count <= 0) live.delete(id);
}
