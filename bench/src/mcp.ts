import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { commandLine } from './lib/command-line';
import { LOAD_CORE, pin, startBenchRedis, startPinnedServer } from './lib/machine';
import { describeHost, thisHost } from './lib/host';
import { envInt, fmt, markdownTable } from './lib/stats';

/*
 * What limiting a tool adds to an MCP tool call (`npm run bench:mcp`): the server of mcp-server.ts (three
 * tools: plain, checked, settled) in a process of its own on SERVER_CORE; this process, the SDK's client,
 * pinned beside Redis on LOAD_CORE, calling one call at a time. Two measures per limited tool, taken in the
 * server: the time from the wrapper's entry to the callback's (the check: what the limit adds before the tool
 * runs) and, for `settled`, from the callback's answer to the wrapper's (the settle); and the client's whole
 * call, whose difference to `plain` includes the JSON-RPC and HTTP around it. The calls are interleaved round
 * by round, so the three see the same machine. BENCH_CALLS rounds (default 3000) after BENCH_WARMUP (3000: the JIT settles late).
 * Writes bench/results/mcp.json.
 */
const CALLS = envInt('BENCH_CALLS', 3000);
const WARMUP = envInt('BENCH_WARMUP', 3000);

const quantile = (values: number[], q: number): number => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const summary = (values: number[]): { p50: number; p99: number; max: number } => ({
  p50: quantile(values, 0.5),
  p99: quantile(values, 0.99),
  max: Math.max(...values),
});

async function main(): Promise<void> {
  commandLine(
    'npm run bench:mcp',
    "what limiting a tool adds to an MCP tool call over Streamable HTTP, beside a Redis PING's floor; writes bench/results/mcp.json",
    [
      { env: 'BENCH_CALLS', default: '3000', what: 'measured calls of each tool, one at a time' },
      { env: 'BENCH_WARMUP', default: '3000', what: 'rounds before measuring (the JIT settles late)' },
    ],
    'BENCH_CALLS=500 BENCH_WARMUP=500 npm run bench:mcp',
  );
  const loadBefore = loadavg()[0]!;
  pin(process.pid, LOAD_CORE);
  const bench = await startBenchRedis();
  const server = await startPinnedServer(join(__dirname, 'mcp-server.ts'), [bench.url]);
  const base = `http://127.0.0.1:${server.port}`;
  const client = new Client({ name: 'bench', version: '1.0.0' });
  // The SDK's client hands every POST its transport's one AbortSignal, and undici keeps a listener on it per
  // request until that request is collected: thousands pile up (Node warns). The bench never aborts.
  const unsignalled: typeof fetch = (url, init) => fetch(url, { ...init, signal: null });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { fetch: unsignalled }));

  const tools = ['plain', 'pinged', 'checked', 'settled'] as const;
  const whole: Record<(typeof tools)[number], number[]> = { plain: [], pinged: [], checked: [], settled: [] };
  for (let round = 0; round < WARMUP + CALLS; round++) {
    if (round === WARMUP) await fetch(`${base}/measure`, { method: 'POST' });
    for (const tool of tools) {
      const t0 = performance.now();
      const r = (await client.callTool({ name: tool })) as CallToolResult;
      const ms = performance.now() - t0;
      if (r.isError) throw new Error(`bench: ${tool} was denied: ${JSON.stringify(r.content)}`);
      if (round >= WARMUP) whole[tool].push(ms);
    }
  }
  const inside = (await (await fetch(`${base}/timings`)).json()) as {
    checked: number[];
    settled: number[];
    settle: number[];
    ping: number[];
  };
  const direct = (await (await fetch(`${base}/direct?rounds=${CALLS}&warmup=${WARMUP}`, { method: 'POST' })).json()) as {
    ping: number[];
    check: number[];
  };
  await client.close();
  server.child.kill('SIGTERM');
  await once(server.child, 'exit');
  await bench.stop();

  const results = {
    // The 1-minute load average before and after: on a machine other jobs share, the wait for a CPU is in every figure.
    meta: { calls: CALLS, warmup: WARMUP, host: thisHost(), loadAverage: [loadBefore, loadavg()[0]!], command: 'npm run bench:mcp' },
    call: { plain: summary(whole.plain), pinged: summary(whole.pinged), checked: summary(whole.checked), settled: summary(whole.settled) },
    check: { pinged: summary(inside.ping), checked: summary(inside.checked), settled: summary(inside.settled) },
    settle: summary(inside.settle),
    direct: { ping: summary(direct.ping), check: summary(direct.check) },
  };
  writeFileSync(join(__dirname, '..', 'results', 'mcp.json'), `${JSON.stringify(results, null, 2)}\n`);
  const ms = (n: number): string => fmt(n, 3);
  console.log(
    `MCP tool calls over Streamable HTTP on loopback, ${CALLS} of each, one at a time (${describeHost(results.meta.host)}; load average ${fmt(loadBefore, 1)} before, ${fmt(results.meta.loadAverage[1]!, 1)} after)`,
  );
  const row = (label: string, m: { p50: number; p99: number; max: number }): string[] => [label, ms(m.p50), ms(m.p99), ms(m.max)];
  console.log(
    markdownTable(
      ['measure (ms)', 'p50', 'p99', 'max'],
      [
        row('plain call, client side', results.call.plain),
        row('checked call, client side', results.call.checked),
        row('settled call, client side', results.call.settled),
        row('a Redis PING where the check would be (the floor)', results.check.pinged),
        row('the check before the callback (checked)', results.check.checked),
        row('the reservation before the callback (settled)', results.check.settled),
        row('the settle after the callback (settled)', results.settle),
        row('a Redis PING, called directly (the floor)', results.direct.ping),
        row('the check, the wrapper called directly', results.direct.check),
      ],
    ),
  );
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
