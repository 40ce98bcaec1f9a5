/**
 * Floodgate metrics for Prometheus through prom-client (an optional peer dependency).
 *
 * @module @floodgate/metrics/prometheus
 */
import { Counter, Gauge, Histogram, register as globalRegistry, type Registry } from 'prom-client';
import type { Limiter, LimiterEvent } from '@floodgate/core';
import { DURATION_BUCKETS_S, METRICS, STATUS_VALUE } from './names';

export interface PrometheusOptions {
  /** Default: prom-client's global `register`. */
  registry?: Registry;
}

interface Instruments {
  decisions: Counter<'limiter' | 'outcome' | 'source'>;
  duration: Histogram<'limiter'>;
  errors: Counter<'limiter' | 'kind' | 'policy'>;
  refunds: Counter<'limiter'>;
  settleFailures: Counter<'limiter' | 'reason'>;
  healthChecks: Counter<'limiter' | 'result'>;
  breaker: Gauge<'limiter'>;
  status: Gauge<'limiter'>;
  /** The limiters the gauges read at each scrape (all instrument() calls on this registry). */
  limiters: Set<Limiter>;
}

/** One set of metrics per registry, however many times instrument is called (prom-client refuses a name twice). */
const perRegistry = new WeakMap<Registry, Instruments>();

function instruments(registry: Registry): Instruments {
  const known = perRegistry.get(registry);
  if (known !== undefined) return known;
  const limiters = new Set<Limiter>();
  const gauge = (def: { prometheus: string; help: string }, read: (l: Limiter) => Promise<number | undefined>) =>
    new Gauge({
      name: def.prometheus,
      help: def.help,
      labelNames: ['limiter'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const l of limiters) {
          const value = await read(l);
          if (value !== undefined) this.set({ limiter: l.name }, value);
        }
      },
    });
  const made: Instruments = {
    decisions: new Counter({
      name: METRICS.decisions.prometheus,
      help: METRICS.decisions.help,
      labelNames: ['limiter', 'outcome', 'source'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: METRICS.storeDuration.prometheus,
      help: METRICS.storeDuration.help,
      labelNames: ['limiter'] as const,
      buckets: DURATION_BUCKETS_S,
      registers: [registry],
    }),
    errors: new Counter({
      name: METRICS.storeErrors.prometheus,
      help: METRICS.storeErrors.help,
      labelNames: ['limiter', 'kind', 'policy'] as const,
      registers: [registry],
    }),
    refunds: new Counter({
      name: METRICS.refunds.prometheus,
      help: METRICS.refunds.help,
      labelNames: ['limiter'] as const,
      registers: [registry],
    }),
    settleFailures: new Counter({
      name: METRICS.settleFailures.prometheus,
      help: METRICS.settleFailures.help,
      labelNames: ['limiter', 'reason'] as const,
      registers: [registry],
    }),
    healthChecks: new Counter({
      name: METRICS.healthChecks.prometheus,
      help: METRICS.healthChecks.help,
      labelNames: ['limiter', 'result'] as const,
      registers: [registry],
    }),
    breaker: gauge(METRICS.breakerOpen, async (l) => {
      const h = await l.health({ probe: false });
      return h.breaker === 'none' ? undefined : h.breaker === 'open' ? 1 : 0;
    }),
    status: gauge(METRICS.storeStatus, async (l) => STATUS_VALUE[(await l.health({ probe: false })).status]),
    limiters,
  };
  perRegistry.set(registry, made);
  return made;
}

/**
 * Records the limiters' metrics in `registry` until the returned function is called. Serve them as usual:
 * `res.end(await registry.metrics())` with `registry.contentType`.
 */
export function instrumentPrometheus(limiters: Limiter | readonly Limiter[], options: PrometheusOptions = {}): () => void {
  const list = Array.isArray(limiters) ? (limiters as readonly Limiter[]) : [limiters as Limiter];
  const m = instruments(options.registry ?? globalRegistry);
  const record = (event: LimiterEvent): void => {
    switch (event.type) {
      case 'decision':
        m.decisions.inc({ limiter: event.limiter, outcome: event.outcome, source: event.source });
        if (event.latencyMs !== undefined) m.duration.observe({ limiter: event.limiter }, event.latencyMs / 1000);
        break;
      case 'store-error':
        m.errors.inc({ limiter: event.limiter, kind: event.error.kind, policy: event.policy });
        break;
      case 'refund':
        m.refunds.inc({ limiter: event.limiter });
        break;
      case 'settle-failed':
        m.settleFailures.inc({ limiter: event.limiter, reason: event.reason });
        break;
      case 'health-check':
        m.healthChecks.inc({ limiter: event.limiter, result: event.status });
        break;
      default:
        break;
    }
  };
  const stops = list.map((l) => l.subscribe(record));
  for (const l of list) m.limiters.add(l);
  return () => {
    for (const stop of stops) stop();
    for (const l of list) m.limiters.delete(l);
  };
}
