import { commandCalls } from '../src/lib/machine';
import { markdownTable, median } from '../src/lib/stats';
import { parseMonitorLine } from '../src/http/load';
import { printTables, type VariantResult } from '../src/http/report-tables';
import { FRAMEWORKS } from '../src/http/frameworks';
import { SHAPE, isOptIn, peerGroups, runs } from '../src/http/shapes';
import { renderRatioChart } from '../src/ratio-chart';
import { paired, verdict } from '../src/targets';

/* A cheap smoke test of the benchmark harness's pure parts; the benchmarks themselves run with `npm run bench`. */
test('median of odd and even lists', () => {
  expect(median([3, 1, 2])).toBe(2);
  expect(median([4, 1, 2, 3])).toBe(2.5);
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
