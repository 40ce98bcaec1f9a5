/**
 * Floodgate metrics through OpenTelemetry (@opentelemetry/api, an optional peer dependency).
 *
 * @module @floodgate/metrics/opentelemetry
 */
import { metrics, ValueType, type Meter } from '@opentelemetry/api';
import type { Limiter, LimiterEvent } from '@floodgate/core';
import { DURATION_BUCKETS_S, METRICS, STATUS_VALUE } from './names';

export interface OpenTelemetryOptions {
  /** Default: `metrics.getMeter('@floodgate/metrics')` from the global MeterProvider. */
  meter?: Meter;
}

/**
 * Records the limiters' metrics (names in ./names.ts) until the returned function is called. Counters and
 * the histogram are fed by each limiter's events (limiter.subscribe); the breaker and status gauges are read
 * at collection time from limiter.health({ probe: false }), which sends nothing to the store.
 */
export function instrumentOpenTelemetry(limiters: Limiter | readonly Limiter[], options: OpenTelemetryOptions = {}): () => void {
  const list = Array.isArray(limiters) ? (limiters as readonly Limiter[]) : [limiters as Limiter];
  const meter = options.meter ?? metrics.getMeter('@floodgate/metrics');
  const decisions = meter.createCounter(METRICS.decisions.otel, { description: METRICS.decisions.help, valueType: ValueType.INT });
  const duration = meter.createHistogram(METRICS.storeDuration.otel, {
    description: METRICS.storeDuration.help,
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
  });
  const errors = meter.createCounter(METRICS.storeErrors.otel, { description: METRICS.storeErrors.help, valueType: ValueType.INT });
  const refunds = meter.createCounter(METRICS.refunds.otel, { description: METRICS.refunds.help, valueType: ValueType.INT });
  const settleFailures = meter.createCounter(METRICS.settleFailures.otel, {
    description: METRICS.settleFailures.help,
    valueType: ValueType.INT,
  });
  const healthChecks = meter.createCounter(METRICS.healthChecks.otel, {
    description: METRICS.healthChecks.help,
    valueType: ValueType.INT,
  });
  const breaker = meter.createObservableGauge(METRICS.breakerOpen.otel, {
    description: METRICS.breakerOpen.help,
    valueType: ValueType.INT,
  });
  const status = meter.createObservableGauge(METRICS.storeStatus.otel, { description: METRICS.storeStatus.help, valueType: ValueType.INT });

  const record = (event: LimiterEvent): void => {
    switch (event.type) {
      case 'decision':
        decisions.add(1, { limiter: event.limiter, outcome: event.outcome, source: event.source });
        if (event.latencyMs !== undefined) duration.record(event.latencyMs / 1000, { limiter: event.limiter });
        break;
      case 'store-error':
        errors.add(1, { limiter: event.limiter, kind: event.error.kind, policy: event.policy });
        break;
      case 'refund':
        refunds.add(1, { limiter: event.limiter });
        break;
      case 'settle-failed':
        settleFailures.add(1, { limiter: event.limiter, reason: event.reason });
        break;
      case 'health-check':
        healthChecks.add(1, { limiter: event.limiter, result: event.status });
        break;
      default:
        break;
    }
  };
  const stops = list.map((l) => l.subscribe(record));
  const observe = async (result: { observe(value: number, attributes: { limiter: string }): void }, gauge: 'breaker' | 'status') => {
    for (const l of list) {
      const h = await l.health({ probe: false });
      if (gauge === 'breaker') {
        if (h.breaker !== 'none') result.observe(h.breaker === 'open' ? 1 : 0, { limiter: l.name });
      } else result.observe(STATUS_VALUE[h.status], { limiter: l.name });
    }
  };
  const onBreaker = (result: Parameters<typeof observe>[0]) => observe(result, 'breaker');
  const onStatus = (result: Parameters<typeof observe>[0]) => observe(result, 'status');
  breaker.addCallback(onBreaker);
  status.addCallback(onStatus);
  return () => {
    for (const stop of stops) stop();
    breaker.removeCallback(onBreaker);
    status.removeCallback(onStatus);
  };
}
