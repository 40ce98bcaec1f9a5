import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandCalls } from '../src/lib/machine';
import { envInt, markdownTable, median } from '../src/lib/stats';
import { parseMonitorLine } from '../src/http/load';
import { printTables, type VariantResult } from '../src/http/report-tables';
import { FRAMEWORKS } from '../src/http/frameworks';
import { ALL_SHAPES, SHAPE, SHAPES, floodgateLimits, isHand429, isOptIn, peerGroups, runs } from '../src/http/shapes';
import { latencyVariants } from '../src/http/latency';
import { renderRatioChart } from '../src/ratio-chart';
import { paired, targets, verdict } from '../src/targets';
import type { CoreMeta } from '../src/core-table';
import { figures } from '../src/doc-figures';
import { describeHost, machineLine, type Host } from '../src/lib/host';
import { mergeRun, type HttpMeta } from '../src/http/merge';

/* A cheap smoke test of the benchmark harness's pure parts; the benchmarks themselves run with `npm run bench`. */
test('median of odd and even lists', () => {
  expect(median([3, 1, 2])).toBe(2);
  expect(median([4, 1, 2, 3])).toBe(2.5);
});

test('a setting from the environment: its fallback when unset, a positive number, and 0 only where 0 turns something off', () => {
  const name = 'BENCH_TEST_ENV_INT';
  try {
    delete process.env[name];
    expect(envInt(name, 7)).toBe(7);
    process.env[name] = '2.5';
    expect(envInt(name, 7)).toBe(2.5);
    process.env[name] = '0';
    expect(() => envInt(name, 7)).toThrow(`${name} must be a positive number; got 0`);
    expect(envInt(name, 7, true)).toBe(0); // BENCH_SLOW_REDIS_MS=0: no slow-Redis rows
    process.env[name] = '-1';
    expect(() => envInt(name, 7, true)).toThrow(`${name} must be a number, 0 or more; got -1`);
    process.env[name] = 'x';
    expect(() => envInt(name, 7)).toThrow(`${name} must be a positive number; got x`);
  } finally {
    delete process.env[name];
  }
});

test('MONITOR lines split wire commands from script-internal ones', () => {
  expect(parseMonitorLine('1763787793.123456 [0 127.0.0.1:50123] "evalsha" "abc" "4"')).toEqual({
    source: '127.0.0.1:50123',
    command: 'evalsha',
  });
  expect(parseMonitorLine('1763787793.123500 [0 lua] "HGETALL" "k"')).toEqual({ source: 'lua', command: 'hgetall' });
  expect(parseMonitorLine('OK')).toBeUndefined();
});

test('INFO commandstats parses into calls per command', () => {
  const calls = commandCalls('# Commandstats\r\ncmdstat_evalsha:calls=12,usec=3\r\ncmdstat_hgetall:calls=24,usec=1\r\n');
  expect(calls.get('evalsha')).toBe(12);
  expect(calls.get('hgetall')).toBe(24);
});

test('shapes: equal work in equal and multi, 3x2 against the peers stacked 3x1', () => {
  expect(SHAPE.equal.floodgate).toHaveLength(1);
  expect(SHAPE.equal.identifiers('42')).toEqual(['client:42']);
  expect(SHAPE.equal.peers.map((r) => r.id('42'))).toEqual(['client:42']);
  expect(SHAPE['3x2'].floodgate).toHaveLength(3);
  expect(SHAPE['3x2'].identifiers('42')).toEqual(['client:42', 'org:42']);
  expect(SHAPE['3x2'].peers).toHaveLength(3);
  // multi: the peers check the same 3 rules on the same 2 identifiers, so both sides deny alike.
  const fg = SHAPE.multi.floodgate.flatMap((r) =>
    SHAPE.multi
      .identifiers('1042')
      .filter((id) => id.startsWith(`${r.for}:`))
      .map((id) => `${id} ${r.limit}/${r.windowMs}`),
  );
  expect(fg).toHaveLength(6);
  const peers = SHAPE.multi.peers.map((r) => `${r.id('1042')} ${r.limit}/${r.windowMs}`);
  expect(peers.sort()).toEqual(fg.sort());
  expect(peerGroups(SHAPE.multi)).toHaveLength(2);
  expect(SHAPE.hot.random).toBe(false);
  expect(runs('express', 'floodgate:fixed-window', 'equal')).toBe(true);
  expect(runs('koa', 'floodgate:fixed-window', 'equal')).toBe(false);
  expect(runs('express', 'floodgate:headers-off', 'equal')).toBe(true);
  expect(runs('express', 'floodgate:headers-off', '3x2')).toBe(false);
  expect(runs('express', '429', 'equal')).toBe(false);
  expect(isOptIn('floodgate@before') && isOptIn('floodgate+autopipeline')).toBe(true);
  // Peers run by default, whatever their names hold (@fastify/rate-limit).
  expect(['floodgate:token-bucket', '@fastify/rate-limit', '429'].some(isOptIn)).toBe(false);
});

test('settle: opt-in, requests and tokens on the client id on both sides, settled below the estimate', () => {
  expect(SHAPES).not.toContain('settle');
  expect(ALL_SHAPES).toEqual([...SHAPES, 'settle']);
  const s = SHAPE.settle;
  expect(floodgateLimits(s)).toEqual([
    { limit: 1e9, window: 60_000 },
    { limit: 1e9, window: 60_000, unit: 'tokens' },
  ]);
  expect(s.identifiers('42')).toEqual(['client:42']);
  expect(s.peers.map((r) => `${r.id('42')} ${r.unit ?? 'requests'} ${r.limit}/${r.windowMs}`)).toEqual([
    'client:42 requests 1000000000/60000',
    'client:42 tokens 1000000000/60000',
  ]);
  // Deterministic per client, and always below the estimate: every settle gives back (a second script call).
  const actuals = ['1', '299', '300', '10000'].map((c) => s.budget!.actual(c));
  expect(actuals).toEqual([101, 399, 100, 200]);
  expect(Math.max(...actuals)).toBeLessThan(s.budget!.estimate);
  expect(s.random).toBe(true);
  // Floodgate and rate-limiter-flexible on the four frameworks; no other peer, no NestJS.
  for (const fw of ['express', 'fastify', 'koa', 'hono']) {
    const here = Object.keys(FRAMEWORKS[fw]!).filter((v) => v !== 'baseline' && !isOptIn(v) && runs(fw, v, 'settle'));
    expect(here.sort()).toEqual(['floodgate', 'rate-limiter-flexible']);
  }
  for (const fw of ['nestjs-express', 'nestjs-fastify'])
    expect(Object.keys(FRAMEWORKS[fw]!).some((v) => runs(fw, v, 'settle'))).toBe(false);
  // rate-limiter-flexible: every shape on Express, only settle elsewhere.
  expect(runs('express', 'rate-limiter-flexible', 'equal')).toBe(true);
  expect(runs('hono', 'rate-limiter-flexible', 'equal')).toBe(false);
  expect(runs('hono', 'floodgate+autopipeline', 'settle')).toBe(true);
});

test('hono-rate-limiter is the Hono peer in every shape but settle', () => {
  expect(Object.keys(FRAMEWORKS.hono ?? {}).sort()).toEqual([
    '429',
    'baseline',
    'floodgate',
    'floodgate+autopipeline',
    'hono-rate-limiter',
    'rate-limiter-flexible',
  ]);
  for (const shape of SHAPES) expect(runs('hono', 'hono-rate-limiter', shape)).toBe(true);
  expect(runs('hono', 'hono-rate-limiter', 'settle')).toBe(false);
});

test('NestJS runs on both platforms: no limiter, Floodgate, @nestjs/throttler on Redis and a hand-written 429', () => {
  for (const fw of ['nestjs-express', 'nestjs-fastify'])
    expect(Object.keys(FRAMEWORKS[fw] ?? {}).sort()).toEqual([
      '429',
      '@nestjs/throttler',
      'baseline',
      'floodgate',
      'floodgate+autopipeline',
    ]);
});

test('Next.js: no limiter, Floodgate in the proxy and around a route handler, a hand-written 429 in each place; no peer', () => {
  expect(Object.keys(FRAMEWORKS.next ?? {}).sort()).toEqual([
    '429',
    '429-route',
    'baseline',
    'floodgate',
    'floodgate+autopipeline',
    'floodgate-route',
  ]);
  for (const shape of SHAPES) expect(runs('next', 'floodgate-route', shape)).toBe(true);
  expect(runs('next', '429-route', 'hot')).toBe(true);
  expect(runs('next', '429-route', 'equal')).toBe(false);
  expect(runs('next', 'floodgate', 'settle')).toBe(false);
  expect(isHand429('429-route') && isHand429('429') && !isHand429('floodgate')).toBe(true);
  // Both of Floodgate's places take the latency phase; the hand-written 429s do not.
  expect(latencyVariants('next', Object.keys(FRAMEWORKS.next!))).toEqual(['floodgate', 'floodgate-route']);
  // An opt-in variant only when BENCH_VARIANTS lists it (an A/B against the build before).
  expect(latencyVariants('next', Object.keys(FRAMEWORKS.next!), ['floodgate+autopipeline'])).toContain('floodgate+autopipeline');
});

test('the latency phase runs Floodgate without headers on Express, beside the peer that sends none', () => {
  // On Express, Floodgate without headers beside rate-limiter-flexible's header-less middleware (the same
  // HTTP work); not the per-algorithm variants, which the equal shape does not run.
  const express = latencyVariants('express', Object.keys(FRAMEWORKS.express!));
  expect(express).toEqual(expect.arrayContaining(['floodgate', 'floodgate:headers-off', 'express-rate-limit', 'rate-limiter-flexible']));
  expect(express.filter((v) => v.startsWith('floodgate:'))).toEqual(['floodgate:headers-off']);
  expect(latencyVariants('fastify', Object.keys(FRAMEWORKS.fastify!))).not.toContain('floodgate:headers-off');
});

test("Next.js's rows: targets against the hand-written 429 in the same place, its table, and a run without it says so", () => {
  const row = (shape: string, variant: string, ratio: number, denied = 0, wire: Record<string, number> = {}): VariantResult =>
    ({
      framework: 'next',
      shape,
      variant,
      ratio,
      ratios: [ratio],
      cpuUsPerReq: 300,
      baseCpuUsPerReq: 250,
      non2xxShare: denied,
      wirePerReq: wire,
    }) as VariantResult;
  const http = [
    row('equal', 'floodgate', 0.8, 0, { evalsha: 1 }),
    row('equal', 'floodgate-route', 0.85, 0, { evalsha: 1 }),
    row('hot', 'floodgate', 1.1, 1),
    row('hot', 'floodgate-route', 0.9, 1, { evalsha: 0.001 }),
    row('hot', '429', 1.0, 1),
    row('hot', '429-route', 1.0, 1),
  ];
  const checks = targets(http, []);
  expect(checks.find((c) => c[0].startsWith('5. next hot'))?.[2]).toBe('met');
  expect(checks.find((c) => c[0].startsWith('5. next (route handler) hot'))?.[2]).toBe('missed by 10%');
  expect(checks.find((c) => c[0] === 'next (route handler) hot: 0 commands for a cached blocked client')?.[2]).toBe('met');
  // No peer ran: nothing compares with one, and the table has no peer's column.
  expect(checks.some((c) => /^[124]\. next/.test(c[0]))).toBe(false);
  const core = { meta: { date: '2026-01-01' } as CoreMeta, rows: [] };
  const f = figures({ http: { meta: { date: '2026-01-01' }, results: http }, core });
  expect(f.get('http-table')!.split('\n')[0]).toBe('| shape | Next.js: Floodgate |');
  const table = f.get('next-table')!.split('\n');
  expect(table[2]).toBe('| equal | Floodgate in the proxy (`rateLimit()`) | 0.80 | 0% | 300 (250) | 1.00 |');
  expect(table.slice(4).map((l) => l.split(' | ')[1])).toEqual([
    'Floodgate in the proxy (`rateLimit()`)',
    'Floodgate around the route handler (`routeRateLimit()`)',
    'a hand-written 429 in the proxy, no limiter',
    'a hand-written 429 in the route handler, no limiter',
  ]);
  expect(figures({ http: { meta: { date: '2026-01-01' }, results: [] }, core }).get('next-table')).toMatch(
    /^Not measured in the latest run: `BENCH_FRAMEWORKS=next BENCH_MERGE=1 npm run bench`/,
  );
});

test("tRPC's figures come from its results file: calls/s with and without the limiter, script calls per batch", () => {
  const trpc = {
    seconds: 5,
    batch: 10,
    clients: 16,
    callsPerSecond: { noLimiter: 5000, floodgate: 4500 },
    redisScriptCallsPerBatch: { '1': 1, '10': 1, '100': 7 },
  };
  const f = figures({
    http: { meta: { date: '2026-01-01' }, results: [] },
    core: { meta: { date: '2026-01-01' } as CoreMeta, rows: [] },
    trpc,
  });
  expect(f.get('trpc-table')).toBe(
    '| server | calls/s | of no limiter |\n| --- | --- | --- |\n| tRPC, no limiter | 5,000 | 1 |\n| tRPC + `@floodgate/trpc` | 4,500 | 0.90 |',
  );
  expect(f.get('trpc-batch-table')!.split('\n')).toEqual([
    '| calls in one batch | 1 | 10 | 100 |',
    '| --- | --- | --- | --- |',
    '| Redis script calls | 1 | 1 | 7 |',
  ]);
  expect([f.get('trpc-batch-1'), f.get('trpc-batch-10'), f.get('trpc-batch-100'), f.get('trpc-ratio')]).toEqual(['1', '1', '7', '0.90x']);
  expect(f.get('trpc-setup')).toBe('16 clients, batches of 10 calls, 5 s per measurement');
});

test('tables and the chart render a result', () => {
  const r: VariantResult = {
    framework: 'express',
    shape: 'equal',
    variant: 'floodgate',
    rps: 900,
    baseRps: 1000,
    ratio: 0.9,
    p50Ms: 1,
    p99Ms: 2,
    baseP50Ms: 1,
    baseP99Ms: 2,
    cpuUsPerReq: 50,
    baseCpuUsPerReq: 40,
    non2xxShare: 0,
    wirePerReq: { evalsha: 1 },
    luaPerReq: 9,
    allCmdsPerReq: 10,
    bytesPerClient: 300,
    keys: 10,
  };
  expect(printTables([r])).toContain('| express | floodgate | 0.90 | 0.0% | 50 (40) |');
  expect(markdownTable(['a'], [['1']])).toBe('| a |\n| --- |\n| 1 |');
  const svg = renderRatioChart('t', 's', [{ shape: 'equal', framework: 'express', variant: 'floodgate', ratio: 0.9 }]);
  expect(svg).toMatch(/^<svg/);
  expect(svg).toContain('0.90');
});

test("targets pick Hono's best peer, compare settle with rate-limiter-flexible, and label a peer shared by frameworks", () => {
  const row = (framework: string, shape: string, variant: string, ratio: number): VariantResult => ({
    framework,
    shape,
    variant,
    rps: 1000 * ratio,
    baseRps: 1000,
    ratio,
    ratios: [ratio],
    p50Ms: 1,
    p99Ms: 2,
    baseP50Ms: 1,
    baseP99Ms: 2,
    cpuUsPerReq: 60,
    baseCpuUsPerReq: 40,
    non2xxShare: 0,
    wirePerReq: { evalsha: 1 },
    luaPerReq: 2,
    allCmdsPerReq: 1,
  });
  const http = [
    row('hono', 'equal', 'floodgate', 0.8),
    row('hono', 'equal', 'hono-rate-limiter', 0.5),
    row('hono', '3x2', 'floodgate', 0.6),
    row('hono', '3x2', 'hono-rate-limiter', 0.3),
    { ...row('hono', 'hot', 'floodgate', 0.9), cpuUsPerReq: 30, non2xxShare: 1 },
    { ...row('hono', 'hot', 'hono-rate-limiter', 0.6), cpuUsPerReq: 45, non2xxShare: 1 },
    row('hono', 'settle', 'floodgate', 0.6),
    row('hono', 'settle', 'rate-limiter-flexible', 0.4),
    row('express', 'settle', 'floodgate', 0.5),
    row('express', 'settle', 'rate-limiter-flexible', 0.5),
  ];
  const checks = targets(http, []);
  const find = (start: string): string[] | undefined => checks.find((c) => c[0].startsWith(start));
  expect(find("1. hono equal: server CPU added per request <= the best peer's (hono-rate-limiter)")?.[1]).toMatch(/^20 vs 20 µs/);
  expect(find('2. hono equal (1 x 1): >= 1.0x the best peer (hono-rate-limiter)')).toEqual([
    expect.any(String),
    expect.stringMatching(/^1\.60x \(0\.80 vs 0\.50/),
    'met; goal 1.15x met',
  ]);
  // The server's busy share: CPU time over wall time (a row without it has no 3a line).
  expect(find('3a. hono 3x2')).toBeUndefined();
  expect(find("3b. hono 3x2: >= the best peer's 1 x 1")?.[1]).toMatch(/^1\.20x/);
  expect(find("4. hono hot (the denied path): >= the best peer's (hono-rate-limiter)")).toEqual([
    expect.any(String),
    expect.stringMatching(/^1\.50x \(0\.90 vs 0\.60 of baseline; server CPU per request 30 vs 45 µs; denied 100\.0% \/ 100\.0%\)/),
    'met',
  ]);
  expect(find('hono settle: against rate-limiter-flexible')?.[1]).toMatch(/^1\.50x \(0\.60 vs 0\.40/);
  expect(find('express settle: against rate-limiter-flexible')?.[1]).toMatch(/^1\.00x/);
  const table = figures({
    http: { meta: { date: '2026-01-01' }, results: http },
    core: { meta: { date: '2026-01-01' } as CoreMeta, rows: [] },
  }).get('http-table')!;
  expect(table.split('\n')[0]).toBe(
    '| shape | Hono: Floodgate | hono-rate-limiter | Hono: rate-limiter-flexible | Express: Floodgate | Express: rate-limiter-flexible |',
  );
});

test('3a reads how busy the server was in 3x2, and a miss says by how much', () => {
  const r = { framework: 'fastify', shape: '3x2', variant: 'floodgate', ratio: 0.4, ratios: [0.4], serverBusy: 0.82, loadCoreBusy: 0.99 };
  const checks = targets([r as VariantResult], []);
  expect(checks.find((c) => c[0].startsWith('3a. fastify 3x2'))).toEqual([
    '3a. fastify 3x2: the server >= 95% busy (not waiting on the round trip)',
    'server 82% busy, Redis + load core 99%',
    'missed by 14%',
  ]);
});

test("targets compare rep by rep, and a miss says whether the run's noise spans the goal", () => {
  const row = (variant: string, ratios: number[]): VariantResult =>
    ({ framework: 'koa', shape: 'equal', variant, ratio: median(ratios), ratios }) as VariantResult;
  const q = paired(row('floodgate', [0.9, 0.6, 0.8]), row('koa-ratelimit', [0.6, 0.6, 0.8]));
  expect(q.reps).toEqual([1.5, 1, 1]);
  expect(q.mid).toBe(1);
  expect([q.lo, q.hi]).toEqual([1, 1.5]);
  expect(verdict(q, 1)).toBe('met');
  expect(verdict(q, 1.15)).toBe("missed by 13% (met in 1 of 3 reps: within the run's noise)");
  expect(verdict(q, 1.6)).toBe('missed by 38% (in every rep)');
  expect(verdict(paired(row('floodgate', [0.96, 0.97, 0.9])), 0.95)).toBe('met (in 2 of 3 reps)');
  // Reps that do not line up fall back to the quotient of the medians.
  expect(paired(row('floodgate', [0.8, 0.8]), row('koa-ratelimit', [0.4])).reps).toEqual([2]);
  expect(verdict(0.4, 0.5)).toBe('missed by 20%');
});

describe('which machine a results file was measured on', () => {
  const amd = { cpus: 2, cpu: 'AMD EPYC', memGiB: 24, node: 'v20.20.2' };
  const xeon = { cpus: 2, cpu: 'Intel(R) Xeon(R) Processor', memGiB: 24, node: 'v20.20.2' };
  const row = (framework: string, shape: string, variant: string, ratio: number): VariantResult =>
    ({ framework, shape, variant, ratio }) as VariantResult;
  const meta = (host: typeof amd | undefined, date: string): HttpMeta => ({
    date,
    seconds: 3,
    connections: 50,
    reps: 5,
    minutes: 40,
    host,
  });
  const rank = (r: VariantResult): number => ['express', 'koa'].indexOf(r.framework);

  test("the report names the run's machine, not the one it is regenerated on", () => {
    expect(machineLine([{ name: 'HTTP', host: amd }])).toContain('- Machine: 2 x AMD EPYC, 24 GiB, Node v20.20.2;');
    expect(
      machineLine([
        { name: 'HTTP', host: amd },
        { name: 'core', host: undefined },
      ]),
    ).toContain('HTTP run: 2 x AMD EPYC, 24 GiB, Node v20.20.2; core run: not recorded in its results file');
  });

  test('RESULTS.md names the machine of every run it shows, the latency run too', () => {
    const results = join(__dirname, '..', 'results');
    const machine = readFileSync(join(__dirname, '..', 'RESULTS.md'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('- Machine:'))!;
    const runs = (
      [
        ['http.json', 'HTTP run'],
        ['core.json', 'core run'],
        ['latency.json', 'latency run'],
      ] as const
    ).map(([file, name]) => ({
      name,
      host: describeHost((JSON.parse(readFileSync(join(results, file), 'utf8')) as { meta: { host: Host } }).meta.host),
    }));
    // One machine is named once; machines that differ, each with its run.
    if (runs.every((r) => r.host === runs[0]!.host)) expect(machine).toContain(`- Machine: ${runs[0]!.host};`);
    else for (const r of runs) expect(machine).toContain(`${r.name}: ${r.host}`);
  });

  test('a rerun merges only into a file measured on the same kind of machine', () => {
    const before = { meta: meta(amd, 'then'), results: [row('express', 'equal', 'floodgate', 0.7), row('koa', 'equal', 'floodgate', 0.6)] };
    const merged = mergeRun(
      before,
      { meta: { ...meta(amd, 'now'), host: amd }, results: [row('express', 'equal', 'floodgate', 0.8)] },
      rank,
    );
    expect(merged.results.map((r) => `${r.framework} ${r.ratio}`)).toEqual(['express 0.8', 'koa 0.6']);
    expect(merged.meta.date).toBe('then');
    expect(merged.meta.host).toEqual(amd);
    expect(merged.meta.merged).toEqual(['now: express equal floodgate']);
    const fresh = { meta: { ...meta(xeon, 'now'), host: xeon }, results: [row('koa', 'equal', 'floodgate', 0.5)] };
    expect(() => mergeRun(before, fresh, rank)).toThrow(/measured on 2 x AMD EPYC.*this run on 2 x Intel\(R\) Xeon\(R\) Processor/);
    expect(() => mergeRun({ ...before, meta: meta(undefined, 'then') }, fresh, rank)).toThrow(/a machine it does not record/);
  });
});

describe('the benchmarks answer --help with their settings, and refuse an argument they would ignore', () => {
  const run = (args: string[]): { status: number | null; stdout: string; stderr: string } =>
    spawnSync('npm', args, { cwd: join(__dirname, '..', '..'), encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' } });

  test('npm run bench -- --help (the documented command: the root script hands its arguments to the benchmark)', () => {
    const r = run(['run', 'bench', '--', '--help']);
    expect(r.status).toBe(0);
    for (const setting of [
      'BENCH_SMOKE (0)',
      'BENCH_SECONDS (3 (smoke 0.4))',
      'BENCH_REPS (5 (smoke 1))',
      'BENCH_LATENCY_LOADS',
      'BENCH_SLOW_REDIS_MS (1)',
      'BENCH_FRAMEWORKS',
      'BENCH_SHAPES',
      'BENCH_MERGE',
      'BENCH_NODE_FLAGS',
      'BENCH_LATENCY_OUT',
      'BENCH_LOAD_CORE',
      // Next.js among the frameworks, with where its build is kept.
      'next (next: its app is built once, then cached in bench/next-app/.next)',
      'BENCH_NEXT_WARMUP (5 (smoke 2))',
    ])
      expect(r.stdout).toContain(setting);
    expect(r.stdout).not.toContain('npm run-script'); // npm's own help
  }, 120_000);

  test.each([
    ['bench:graphql', 'BENCH_CONCURRENCY (32)'],
    ['bench:mcp', 'BENCH_WARMUP (3000)'],
    ['bench:trpc', 'BENCH_TRPC_BATCH (10)'],
    ['bench:trpc', 'BENCH_TRPC_OUT (trpc.json)'],
  ])(
    'npm run %s -- --help lists its settings',
    (script, setting) => {
      const r = run(['run', script, '--', '--help']);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(setting);
      expect(r.stdout).toContain('BENCH_LOAD_CORE');
    },
    120_000,
  );

  test('npm run bench:script-cost -- --runs 3 exits 2 naming the argument', () => {
    const r = run(['run', 'bench:script-cost', '--', '--runs', '3']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("unknown argument '--runs' '3'");
    expect(r.stderr).toContain('BENCH_CALLS (60000 (instructions 3000))');
    expect(r.stderr).toContain('BENCH_COUNT (time)');
  }, 120_000);
});
