import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
// The built package, as users run it (`npm run bench:mcp` builds first).
import { rateLimit } from '@floodgate/mcp';

/*
 * The server of `npm run bench:mcp` (mcp.ts starts it in a process of its own, pinned to SERVER_CORE, so the
 * SDK's client and Redis never share its core): an McpServer over Streamable HTTP with three tools that answer
 * at once,
 *   plain    not limited
 *   checked  limited per caller and per tool (two identifiers, two rules: one script call), cost 1
 *   settled  reserved at an estimate of tokens and settled at a smaller actual cost (a second script call)
 * and, around each limited tool, the time from the wrapper's entry to the callback's (the check: what the
 * limit adds before the tool runs) and, for `settled`, from the callback's answer to the wrapper's (the
 * settle). `POST /measure` starts recording (after the warm-up), `GET /timings` answers what was recorded.
 * `POST /direct?rounds=<n>&warmup=<n>` times the limited wrapper called directly, one call at a time, beside a
 * Redis PING (no MCP request around it, the client idle): the check's own latency on this machine.
 * argv: <redis url>; prints `port <n>` once listening.
 */
const [url = 'redis://127.0.0.1:6379'] = process.argv.slice(2);
const redis = new Redis(url);
const limits = rateLimit({
  redis,
  name: 'bench-mcp',
  limits: [
    { limit: 1e9, window: '1h' },
    { limit: 1e9, window: '1h', unit: 'tokens' },
    { limit: 1e9, window: '1m', for: 'tool' },
  ],
});
const timings = { checked: [] as number[], settled: [] as number[], settle: [] as number[], ping: [] as number[] };
let measuring = false;
let entered = 0;
let answered = 0;
const answer = (): CallToolResult => ({ content: [{ type: 'text', text: 'ok' }], _meta: { tokens: 10 } });
// The wrapper's entry and exit around the limited callback: the check before it, the settle after it.
const timed = <H extends (...p: never[]) => Promise<CallToolResult>>(limited: H): H =>
  (async (...p: never[]) => {
    entered = performance.now();
    const result = await limited(...p);
    if (measuring && answered > 0) timings.settle.push(performance.now() - answered);
    answered = 0;
    return result;
  }) as H;
const callback = (tool: 'checked' | 'settled' | 'ping') => (): CallToolResult => {
  if (measuring) timings[tool].push(performance.now() - entered);
  if (tool === 'settled') answered = performance.now();
  return answer();
};
const makeServer = (): McpServer => {
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool('plain', {}, answer);
  // A Redis round trip where the check would be: what any call to Redis costs in this process, the floor.
  server.registerTool(
    'pinged',
    {},
    timed(async () => {
      await redis.ping();
      return callback('ping')();
    }),
  );
  server.registerTool('checked', {}, timed(limits.tool('checked', callback('checked'), { cost: { requests: 1, tokens: 0 } })));
  server.registerTool(
    'settled',
    {},
    timed(limits.tool('settled', callback('settled'), { cost: { requests: 1, tokens: 100 }, settle: () => ({ requests: 1, tokens: 10 }) })),
  );
  return server;
};

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
}

/** A Redis PING and a checked call of the wrapper, alternately; the last `rounds` of `warmup + rounds` timed. */
async function direct(rounds: number, warmup: number): Promise<{ ping: number[]; check: number[] }> {
  // As the SDK calls a tool without input: (extra).
  const tool = limits.tool('direct', (_extra: { sessionId: string }) => answer(), { cost: { requests: 1, tokens: 0 } });
  const out = { ping: [] as number[], check: [] as number[] };
  for (let i = 0; i < warmup + rounds; i++) {
    const t0 = performance.now();
    await redis.ping();
    const t1 = performance.now();
    const result = await tool({ sessionId: 'direct' });
    const t2 = performance.now();
    if (result.isError) throw new Error('bench: the direct call was denied');
    if (i < warmup) continue;
    out.ping.push(t1 - t0);
    out.check.push(t2 - t1);
  }
  return out;
}

const transports = new Map<string, StreamableHTTPServerTransport>();
const http = createServer((req, res) => {
  void (async () => {
    if (req.url === '/measure') {
      measuring = true;
      return void res.end();
    }
    const asked = new URL(req.url ?? '/', 'http://bench');
    if (asked.pathname === '/direct') {
      const n = (name: string): number => Number(asked.searchParams.get(name));
      return void res.setHeader('content-type', 'application/json').end(JSON.stringify(await direct(n('rounds'), n('warmup'))));
    }
    if (req.url === '/timings') return void res.setHeader('content-type', 'application/json').end(JSON.stringify(timings));
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
http.listen(0, '127.0.0.1', () => console.log(`port ${(http.address() as AddressInfo).port}`));
process.on('SIGTERM', () => {
  void limits.close().finally(() => {
    redis.disconnect();
    process.exit(0);
  });
});
