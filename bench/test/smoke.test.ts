import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LatencyRow } from '../src/http/latency';
import type { VariantResult } from '../src/http/report-tables';

/*
 * `BENCH_SMOKE=1 npm run bench` (docs/performance.md), on one framework: both phases run end to end on the
 * smoke run's shared servers (one process per variant, every shape's app on its own port), print the
 * tables marked indicative, and write their results files, a row for every shape x variant. Its figures are
 * not checked: they depend on the machine; that the rows are there and come from requests answered is.
 */
test('the smoke run measures every shape and the latency phase on one framework, and says its figures are indicative', async () => {
  const { stdout } = await promisify(execFile)('npm', ['run', 'bench', '-w', '@floodgate/bench'], {
    cwd: join(__dirname, '..', '..'),
    // Files of its own in bench/results/smoke/ (ignored by git): a contributor's last smoke run stays.
    env: { ...process.env, BENCH_SMOKE: '1', BENCH_FRAMEWORKS: 'koa', BENCH_OUT: 'test-http.json', BENCH_LATENCY_OUT: 'test-latency.json' },
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  expect(stdout).toContain('SMOKE RUN (BENCH_SMOKE=1): 1 rep of 0.4 s per figure');
  expect(stdout).toContain('INDICATIVE (smoke run)');
  const results = join(__dirname, '..', 'results', 'smoke');
  const http = JSON.parse(readFileSync(join(results, 'test-http.json'), 'utf8')) as { meta: { smoke?: boolean }; results: VariantResult[] };
  expect(http.meta.smoke).toBe(true);
  expect(http.results.map((r) => `${r.shape} ${r.variant}`).sort()).toEqual(
    [
      'equal floodgate',
      'equal koa-ratelimit',
      '3x2 floodgate',
      '3x2 koa-ratelimit',
      'multi floodgate',
      'multi koa-ratelimit',
      'hot 429',
      'hot floodgate',
      'hot koa-ratelimit',
    ].sort(),
  );
  for (const r of http.results) {
    expect(r.rps).toBeGreaterThan(0);
    expect(r.baseRps).toBeGreaterThan(0);
  }
  const latency = JSON.parse(readFileSync(join(results, 'test-latency.json'), 'utf8')) as { rows: LatencyRow[] };
  expect(latency.rows.map((r) => `${r.variant} ${r.redis} ${r.load}`).sort()).toEqual(
    ['floodgate loopback 0.5', 'floodgate slow 0.5', 'koa-ratelimit loopback 0.5', 'koa-ratelimit slow 0.5'].sort(),
  );
  for (const r of latency.rows) {
    expect(r.lost).toBe(0);
    // What each run cost the server and Redis is measured: every request costs the server CPU, and a
    // limiter's costs Redis some too.
    expect(r.cpuUsPerReq).toBeGreaterThan(0);
    expect(r.baseCpuUsPerReq).toBeGreaterThan(0);
    expect(r.serverBusy).toBeGreaterThan(0);
    expect(r.redisCpuUsPerReq).toBeGreaterThan(0);
  }
}, 300_000);
