import { commandCalls } from './lib/machine';
import { markdownTable, median } from './lib/stats';
import { parseMonitorLine } from './http/load';
import { printTables, type VariantResult } from './http/report-tables';
import { SHAPE, isOptIn, peerGroups, runs } from './http/shapes';
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
  expect(runs('express', '429', 'equal')).toBe(false);
  expect(isOptIn('floodgate@before') && isOptIn('floodgate+autopipeline')).toBe(true);
  // Peers run by default, whatever their names hold (@fastify/rate-limit).
  expect(['floodgate:token-bucket', '@fastify/rate-limit', '429'].some(isOptIn)).toBe(false);
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
