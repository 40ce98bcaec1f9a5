/**
 * @floodgate/metrics: a limiter's decisions, store round trips, store errors, refunds and health as
 * metrics, through the libraries people already run. Import the one you use:
 * `@floodgate/metrics/opentelemetry` (@opentelemetry/api) or `@floodgate/metrics/prometheus` (prom-client).
 * Both are optional peer dependencies; this entry has only the shared names.
 *
 * @module @floodgate/metrics
 */
export { METRICS, STATUS_VALUE, type MetricName } from './names';
