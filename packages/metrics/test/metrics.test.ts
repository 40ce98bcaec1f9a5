import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { createLimiter, type Limiter, type LimiterOptions } from '@floodgate/core';
import { instrumentOpenTelemetry } from '@floodgate/metrics/opentelemetry';
import { instrumentPrometheus } from '@floodgate/metrics/prometheus';
import { METRICS } from '@floodgate/metrics';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * Issue 15: the metrics, through the real OpenTelemetry SDK and prom-client, fed by real checks on a real
 * Redis (and on one that cannot be reached).
 */
afterAll(closeClients);
const redis = connect();
// Connected before the first check: on a loaded machine a first connection can outlast a check's 250 ms
// deadline, and that check would be the failure policy's (an 'unavailable' decision the counts do not expect).
beforeAll(() => redis.ping());
const quiet = { warn: () => undefined };

/** A reader the test collects from on demand. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

function limiter(name: string, options: Partial<LimiterOptions> = {}): Limiter {
  return createLimiter({ redis, name, prefix: uniquePrefix('m'), limits: { limit: 2, window: '1m' }, logger: quiet, ...options });
}

/** Every data point of `name`, as [attributes, value] (a histogram's value is its count). */
function points(collected: ResourceMetrics, name: string): Array<[Record<string, unknown>, number]> {
  const out: Array<[Record<string, unknown>, number]> = [];
  for (const scope of collected.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const p of metric.dataPoints) {
        const v = p.value as number | { count: number };
        out.push([p.attributes, typeof v === 'number' ? v : v.count]);
      }
    }
  }
  return out;
}

describe('OpenTelemetry', () => {
  test('decisions by outcome and source, store round trips, store errors, refunds, breaker and status gauges', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const api = limiter('api', { refunds: true });
    const dead = new Redis(1, '127.0.0.1', {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 100,
    });
    dead.on('error', () => undefined);
    const down = limiter('down', { redis: dead, failure: 'open', timeoutMs: 50 });
    const stop = instrumentOpenTelemetry([api, down], { meter: provider.getMeter('test') });
    const d = await api.check('ip:1');
    await api.refund(d);
    await api.check('ip:1');
    await api.check('ip:1');
    await api.check('ip:1');
    await api.check('ip:1'); // from the block cache
    await down.check('ip:1');
    const { resourceMetrics } = await reader.collect();
    const decisions = points(resourceMetrics, METRICS.decisions.otel);
    expect(decisions).toEqual(
      expect.arrayContaining([
        [{ limiter: 'api', outcome: 'allowed', source: 'redis' }, 3],
        [{ limiter: 'api', outcome: 'denied', source: 'redis' }, 1],
        [{ limiter: 'api', outcome: 'denied', source: 'cache' }, 1],
        [{ limiter: 'down', outcome: 'allowed', source: 'fallback' }, 1],
      ]),
    );
    expect(points(resourceMetrics, METRICS.storeDuration.otel)).toEqual([[{ limiter: 'api' }, 4]]);
    expect(points(resourceMetrics, METRICS.refunds.otel)).toEqual([[{ limiter: 'api' }, 1]]);
    const errors = points(resourceMetrics, METRICS.storeErrors.otel);
    expect(errors).toHaveLength(1);
    expect(errors[0]![0]).toMatchObject({ limiter: 'down', policy: 'open' });
    expect(points(resourceMetrics, METRICS.storeStatus.otel)).toEqual(
      expect.arrayContaining([
        [{ limiter: 'api' }, 0],
        [{ limiter: 'down' }, 2],
      ]),
    );
    expect(points(resourceMetrics, METRICS.breakerOpen.otel)).toEqual(expect.arrayContaining([[{ limiter: 'api' }, 0]]));
    stop();
    await api.check('ip:2');
    const after = points((await reader.collect()).resourceMetrics, METRICS.decisions.otel);
    expect(after.find(([a]) => a.outcome === 'allowed' && a.limiter === 'api')![1]).toBe(3);
    await provider.shutdown();
    await api.close();
    await down.close();
    dead.disconnect();
  });
});

/** Three reservations of `l` settled with no valid cost (nothing, null, a negative number): their estimates stay. */
async function failedSettles(l: Limiter): Promise<void> {
  for (const actual of [undefined, null, -1]) {
    const r = await l.reserve('ip:9');
    await expect(r.settle(actual as unknown as number)).rejects.toMatchObject({ code: 'ERR_FLOODGATE_ARGUMENT' });
  }
}

test('OpenTelemetry: every failed settle, by limiter and reason', async () => {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const api = limiter('api', { refunds: true, limits: { limit: 5, window: '1m' } });
  const stop = instrumentOpenTelemetry(api, { meter: provider.getMeter('test') });
  await failedSettles(api);
  expect(points((await reader.collect()).resourceMetrics, METRICS.settleFailures.otel)).toEqual([
    [{ limiter: 'api', reason: 'invalid' }, 3],
  ]);
  stop();
  await provider.shutdown();
  await api.close();
});

describe('Prometheus', () => {
  test('every failed settle, by limiter and reason', async () => {
    const registry = new Registry();
    const api = limiter('api', { refunds: true, limits: { limit: 5, window: '1m' } });
    const stop = instrumentPrometheus(api, { registry });
    await failedSettles(api);
    expect(await registry.metrics()).toContain('floodgate_settle_failures_total{limiter="api",reason="invalid"} 3');
    stop();
    await api.close();
  });

  test('the exposition text a scrape gets, in a registry of the application', async () => {
    const registry = new Registry();
    const api = limiter('api');
    const search = limiter('search');
    const stop = instrumentPrometheus(api, { registry });
    // A second call on the same registry shares its metrics (prom-client refuses a name twice).
    instrumentPrometheus(search, { registry });
    await api.check('ip:1');
    await api.check('ip:1');
    await api.check('ip:1');
    await search.check('ip:1');
    const text = await registry.metrics();
    expect(text).toContain('floodgate_decisions_total{limiter="api",outcome="allowed",source="redis"} 2');
    expect(text).toContain('floodgate_decisions_total{limiter="api",outcome="denied",source="redis"} 1');
    expect(text).toContain('floodgate_decisions_total{limiter="search",outcome="allowed",source="redis"} 1');
    expect(text).toMatch(/floodgate_store_duration_seconds_count\{limiter="api"\} 3/);
    expect(text).toContain('floodgate_store_status{limiter="api"} 0');
    expect(text).toContain('floodgate_breaker_open{limiter="search"} 0');
    expect(text).toContain('# HELP floodgate_decisions_total');
    stop();
    await api.check('ip:2');
    const later = await registry.metrics();
    expect(later).toContain('floodgate_decisions_total{limiter="api",outcome="allowed",source="redis"} 2');
    // Unsubscribed limiters leave the gauges too.
    expect(later).not.toContain('floodgate_store_status{limiter="api"}');
    await api.close();
    await search.close();
  });
});

describe('health checks are no decisions', () => {
  /** Five readiness probes, as an application's /health route asks them: the first finds the limiter idle and probes. */
  const fiveProbes = async (l: Limiter): Promise<void> => {
    for (let k = 0; k < 5; k++) await l.health();
    // What the gauges read at a scrape is not a check.
    await l.health({ probe: false });
  };

  test('Prometheus: floodgate_health_checks_total by result, no decision counted', async () => {
    const registry = new Registry();
    const api = limiter('api');
    const stop = instrumentPrometheus(api, { registry });
    await fiveProbes(api);
    const text = await registry.metrics();
    expect(text).toContain('floodgate_health_checks_total{limiter="api",result="ok"} 5');
    expect(text).not.toMatch(/floodgate_decisions_total\{/);
    expect(text).not.toMatch(/floodgate_store_duration_seconds_count\{/);
    stop();
    await api.close();
  });

  test('OpenTelemetry: floodgate.health.checks by result; a probe of a store that cannot be reached is down', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const api = limiter('api');
    const dead = new Redis(1, '127.0.0.1', {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 100,
    });
    dead.on('error', () => undefined);
    const down = limiter('down', { redis: dead, timeoutMs: 50 });
    const stop = instrumentOpenTelemetry([api, down], { meter: provider.getMeter('test') });
    await fiveProbes(api);
    await down.health();
    const { resourceMetrics } = await reader.collect();
    expect(points(resourceMetrics, METRICS.healthChecks.otel)).toEqual(
      expect.arrayContaining([
        [{ limiter: 'api', result: 'ok' }, 5],
        [{ limiter: 'down', result: 'down' }, 1],
      ]),
    );
    expect(points(resourceMetrics, METRICS.decisions.otel)).toEqual([]);
    stop();
    await provider.shutdown();
    await api.close();
    await down.close();
    dead.disconnect();
  });
});

test('docs/grafana-dashboard.json queries only metrics this package exports', () => {
  const dashboard = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'grafana-dashboard.json'), 'utf8');
  const used = new Set([...dashboard.matchAll(/floodgate_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')));
  const exported = new Set<string>(Object.values(METRICS).map((m) => m.prometheus));
  expect(used.size).toBeGreaterThanOrEqual(5);
  for (const name of used) expect({ name, exported: exported.has(name) }).toEqual({ name, exported: true });
});
