import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/mcp';
import { startBenchRedis } from './lib/machine';
import { describeHost, thisHost } from './lib/host';
import { envInt, fmt, markdownTable } from './lib/stats';

/*
 * What limiting a tool adds to an MCP tool call (`npm run bench:mcp`): an McpServer over Streamable HTTP on
 * loopback, the SDK's client calling, one call at a time, three tools that answer at once:
 *   plain    not limited
 *   checked  limited per caller and per tool (two identifiers, two rules: one script call), cost 1
 *   settled  reserved at an estimate of tokens and settled at a smaller actual cost (a second script call)
 * The calls are interleaved round by round, so the three see the same machine. Two measures per limited tool:
 * the time from the wrapper's entry to the callback's (the check, in process: what the limit adds before
 * the tool runs), and for `settled` from the callback's answer to the wrapper's (the settle); and the
 * client's whole call, whose difference to `plain` includes the JSON-RPC and HTTP around it.
 * BENCH_CALLS rounds (default 3000) after BENCH_WARMUP (500). Writes bench/results/mcp.json.
 */
const CALLS = envInt('BENCH_CALLS', 3000);
const WARMUP = envInt('BENCH_WARMUP', 500);

const quantile = (values: number[], q: number): number => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const summary = (values: number[]): { p50: number; p99: number; max: number } => ({
  p50: quantile(values, 0.5),
  p99: quantile(values, 0.99),
  max: Math.max(...values),
});

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const bench = await startBenchRedis();
  const redis = new Redis(bench.url);
  const limits = rateLimit({
    redis,
    name: 'bench-mcp',
    limits: [
      { limit: 1e9, window: '1h' },
      { limit: 1e9, window: '1h', unit: 'tokens' },
      { limit: 1e9, window: '1m', for: 'tool' },
    ],
  });
  const inside = { entered: 0, check: [] as number[], answered: 0, settle: [] as number[] };
  const measured = { on: false };
  const answer = (): CallToolResult => ({ content: [{ type: 'text', text: 'ok' }], _meta: { tokens: 10 } });
  // The wrapper's entry and exit around the limited callback: the check before it, the settle after it.
  const timed = <H extends (...p: never[]) => Promise<CallToolResult>>(limited: H): H =>
    (async (...p: never[]) => {
      inside.entered = performance.now();
      const result = await limited(...p);
      if (measured.on && inside.answered > 0) inside.settle.push(performance.now() - inside.answered);
      inside.answered = 0;
      return result;
    }) as H;
  const callback = (settles: boolean) => (): CallToolResult => {
    if (measured.on) inside.check.push(performance.now() - inside.entered);
    if (settles) inside.answered = performance.now();
    return answer();
  };
  const makeServer = (): McpServer => {
    const server = new McpServer({ name: 'bench', version: '1.0.0' });
    server.registerTool('plain', {}, answer);
    server.registerTool('checked', {}, timed(limits.tool('checked', callback(false), { cost: { requests: 1, tokens: 0 } })));
    server.registerTool(
      'settled',
      {},
      timed(limits.tool('settled', callback(true), { cost: { requests: 1, tokens: 100 }, settle: () => ({ requests: 1, tokens: 10 }) })),
    );
    return server;
  };
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await bodyOf(req) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (transport === undefined && isInitializeRequest(body)) {
        const fresh = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (id) => void transports.set(id, fresh),
        });
        await makeServer().connect(fresh);
        transport = fresh;
      }
      if (transport === undefined) return void res.writeHead(404).end();
      await transport.handleRequest(req, res, body);
    })();
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`)));

  const tools = ['plain', 'checked', 'settled'] as const;
  const whole: Record<(typeof tools)[number], number[]> = { plain: [], checked: [], settled: [] };
  const checks: Record<'checked' | 'settled', number[]> = { checked: [], settled: [] };
  for (let round = 0; round < WARMUP + CALLS; round++) {
    measured.on = round >= WARMUP;
    for (const tool of tools) {
      const before = inside.check.length;
      const t0 = performance.now();
      const r = (await client.callTool({ name: tool })) as CallToolResult;
      const ms = performance.now() - t0;
      if (r.isError) throw new Error(`bench: ${tool} was denied: ${JSON.stringify(r.content)}`);
      if (!measured.on) continue;
      whole[tool].push(ms);
      if (tool !== 'plain') checks[tool].push(inside.check[before]!);
    }
  }
  await client.close();
  http.closeAllConnections();
  http.close();
  await limits.close();
  redis.disconnect();
  await bench.stop();

  const results = {
    // The 1-minute load average before and after: on a machine other jobs share, the wait for a CPU is in every figure.
    meta: { calls: CALLS, warmup: WARMUP, host: thisHost(), loadAverage: [loadBefore, loadavg()[0]!], command: 'npm run bench:mcp' },
    call: { plain: summary(whole.plain), checked: summary(whole.checked), settled: summary(whole.settled) },
    check: { checked: summary(checks.checked), settled: summary(checks.settled) },
    settle: summary(inside.settle),
  };
  writeFileSync(join(__dirname, '..', 'results', 'mcp.json'), `${JSON.stringify(results, null, 2)}\n`);
  const ms = (n: number): string => fmt(n, 3);
  console.log(
    `MCP tool calls over Streamable HTTP on loopback, ${CALLS} of each, one at a time (${describeHost(results.meta.host)}; load average ${fmt(loadBefore, 1)} before, ${fmt(results.meta.loadAverage[1]!, 1)} after)`,
  );
  console.log(
    markdownTable(
      ['measure (ms)', 'p50', 'p99', 'max'],
      [
        ['plain call, client side', ms(results.call.plain.p50), ms(results.call.plain.p99), ms(results.call.plain.max)],
        ['checked call, client side', ms(results.call.checked.p50), ms(results.call.checked.p99), ms(results.call.checked.max)],
        ['settled call, client side', ms(results.call.settled.p50), ms(results.call.settled.p99), ms(results.call.settled.max)],
        [
          'the check before the callback (checked)',
          ms(results.check.checked.p50),
          ms(results.check.checked.p99),
          ms(results.check.checked.max),
        ],
        [
          'the reservation before the callback (settled)',
          ms(results.check.settled.p50),
          ms(results.check.settled.p99),
          ms(results.check.settled.max),
        ],
        ['the settle after the callback (settled)', ms(results.settle.p50), ms(results.settle.p99), ms(results.settle.max)],
      ],
    ),
  );
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
