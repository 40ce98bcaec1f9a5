import { commandCalls } from './lib/machine';
import { markdownTable, median } from './lib/stats';
import { parseMonitorLine } from './http/load';
import { printTables, type VariantResult } from './http/report-tables';
import { SHAPE } from './http/shapes';
import { renderRatioChart } from './ratio-chart';

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

test('shapes: Floodgate checks 3 rules x 2 identifiers in spread and multi, peers 1 and 3 rules', () => {
  expect(SHAPE.spread.floodgate).toHaveLength(3);
  expect(SHAPE.spread.identifiers('42')).toEqual(['client:42', 'org:42']);
  expect(SHAPE.spread.peers).toHaveLength(1);
  expect(SHAPE.multi.peers).toHaveLength(3);
  expect(SHAPE.hot.random).toBe(false);
});

test('tables and the chart render a result', () => {
  const r: VariantResult = {
    framework: 'express',
    shape: 'spread',
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
  expect(printTables([r])).toContain('| express | floodgate | 900 | 1,000 | 0.90 |');
  expect(markdownTable(['a'], [['1']])).toBe('| a |\n| --- |\n| 1 |');
  const svg = renderRatioChart('t', 's', [{ shape: 'spread', framework: 'express', variant: 'floodgate', ratio: 0.9 }]);
  expect(svg).toMatch(/^<svg/);
  expect(svg).toContain('0.90');
});
