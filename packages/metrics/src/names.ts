import type { HealthStatus } from '@floodgate/core';

/**
 * The metrics, one definition for both exporters (docs/operating.md lists them with their labels). OpenTelemetry
 * names are dotted (`floodgate.decisions`); Prometheus names are the same with `_` and its unit suffixes
 * (`floodgate_decisions_total`, `floodgate_store_duration_seconds`).
 */
export const METRICS = {
  decisions: {
    otel: 'floodgate.decisions',
    prometheus: 'floodgate_decisions_total',
    help: 'Decisions made, by limiter, outcome (allowed, denied, blocked, lockout, unavailable, unidentified, listed) and source (redis, memory, cache, fallback, local, list)',
  },
  storeDuration: {
    otel: 'floodgate.store.duration',
    prometheus: 'floodgate_store_duration_seconds',
    help: 'Round trip of the check scripts the store answered, by limiter',
  },
  storeErrors: {
    otel: 'floodgate.store.errors',
    prometheus: 'floodgate_store_errors_total',
    help: 'Store calls that failed, by limiter, kind (timeout, unavailable, circuit-open, overload, reply) and the failure policy applied',
  },
  refunds: {
    otel: 'floodgate.refunds',
    prometheus: 'floodgate_refunds_total',
    help: 'Refunds made (skipSuccessfulRequests, skipFailedRequests, limiter.refund), by limiter',
  },
  settleFailures: {
    otel: 'floodgate.settle.failures',
    prometheus: 'floodgate_settle_failures_total',
    help: 'Settles of reservations that failed, their estimates left counted, by limiter and reason (invalid: no valid actual cost; threw: the settle option threw or rejected; store: the store could not take it)',
  },
  healthChecks: {
    otel: 'floodgate.health.checks',
    prometheus: 'floodgate_health_checks_total',
    help: 'limiter.health() reports (a readiness probe asking; not the gauges read at a scrape), by limiter and result (ok, degraded, down)',
  },
  breakerOpen: {
    otel: 'floodgate.breaker.open',
    prometheus: 'floodgate_breaker_open',
    help: "1 while the limiter's store client circuit breaker is open, else 0, by limiter",
  },
  storeStatus: {
    otel: 'floodgate.store.status',
    prometheus: 'floodgate_store_status',
    help: 'limiter.health() status, by limiter: 0 ok, 1 degraded, 2 down',
  },
} as const;

export type MetricName = keyof typeof METRICS;

/** floodgate.store.status values. */
export const STATUS_VALUE: Record<HealthStatus, number> = { ok: 0, degraded: 1, down: 2 };

/** Store round-trip buckets, in seconds: 0.25 ms to 1 s (a limiter's deadline is usually 50 to 250 ms). */
export const DURATION_BUCKETS_S = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
