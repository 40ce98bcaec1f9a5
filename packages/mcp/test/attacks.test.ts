import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Limiter } from '@floodgate/core';
import { manualClock, settled } from '@floodgate/core/testing';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type McpRateLimit } from '@floodgate/mcp';
import { call, mcpClient, serveMcp, type McpHttp } from './mcp-http';

/*
 * The attacks of docs/mcp.md ("What a client buys by"), mounted over Streamable HTTP on real sockets with
 * the SDK's own client, counted on the test redis-server. With FLOODGATE_FLOOD_FIGURES=1 each prints how
 * many calls ran out of how many were asked.
 */
const redis = connect();
const TOKENS = { 'tok-ada': 'ada', 'tok-bob': 'bob' };

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});
afterAll(closeClients);

const figure = (line: string): void => {
  if (process.env.FLOODGATE_FLOOD_FIGURES === '1') process.stdout.write(`${line}\n`);
};

/** A server whose `work` tool is limited by `limit`, counting the callbacks that ran. */
async function serve(limit: McpRateLimit, ran: { count: number; tokens: number }): Promise<McpHttp> {
  const http = await serveMcp(() => {
    const server = new McpServer({ name: 'attacked', version: '1.0.0' });
    server.registerTool(
      'work',
      { inputSchema: { used: z.number().int().nonnegative().optional() } },
      limit.tool(
        'work',
        ({ used }) => {
          ran.count++;
          ran.tokens += used ?? 0;
          return { content: [{ type: 'text', text: 'ok' }], _meta: { tokens: used ?? 0 } };
        },
        limit.limiter.rules.some((r) => r.unit === 'tokens') ? { cost: 1, settle: (result) => Number(result._meta?.tokens) } : {},
      ),
    );
    return server;
  }, TOKENS);
  open.push(http);
  return http;
}

/** Checks wait for Redis as long as a busy test machine needs (the default deadline is production's). */
function limitOf(options: Parameters<typeof rateLimit>[0]): McpRateLimit {
  const made = rateLimit(options.limiter === undefined ? { timeoutMs: 10_000, ...options } : options);
  open.push(made);
  return made;
}

test('a flood of calls from one identity over 6 sessions on two servers (two limiters, as two processes) runs the limit, no more', async () => {
  const prefix = uniquePrefix('mcp-flood');
  const options = { prefix, name: 'tools', limits: { limit: 10, window: '1h' } } as const;
  const ran = { count: 0, tokens: 0 };
  const servers = [await serve(limitOf({ ...options, redis }), ran), await serve(limitOf({ ...options, redis: connect() }), ran)];
  const clients = await Promise.all(Array.from({ length: 6 }, (_, i) => mcpClient(servers[i % 2]!.url, 'tok-ada')));
  open.push(...clients);
  const results = await Promise.all(clients.flatMap((c) => Array.from({ length: 25 }, () => call(c, 'work'))));
  const admitted = results.filter((r) => !r.isError).length;
  figure(`mcp flood: ${ran.count} calls ran out of ${results.length} asked (6 sessions of one identity on 2 servers, limit 10)`);
  expect([admitted, ran.count]).toEqual([10, 10]);
  for (const denied of results.filter((r) => r.isError)) {
    expect(denied.structuredContent).toMatchObject({ error: 'rate_limited', tool: 'work', limit: 10 });
  }
  // Every session still answers: a denial ended no session, and another identity has its own budget.
  expect((await call(clients[0]!, 'work')).isError).toBe(true);
  const bob = await mcpClient(servers[1]!.url, 'tok-bob');
  open.push(bob);
  expect((await call(bob, 'work')).isError).toBeUndefined();
}, 60_000);

test('a client that lies about its session gets no new budget: a made-up session id is refused, a new session is the same identity', async () => {
  const prefix = uniquePrefix('mcp-session');
  const ran = { count: 0, tokens: 0 };
  const http = await serve(limitOf({ redis, prefix, name: 'tools', limits: { limit: 3, window: '1h' } }), ran);
  const first = await mcpClient(http.url, 'tok-ada');
  open.push(first);
  for (let i = 0; i < 3; i++) expect((await call(first, 'work')).isError).toBeUndefined();
  let asked = 3;
  // Fresh sessions, one after another: each is ada's again.
  for (let i = 0; i < 5; i++) {
    const again = await mcpClient(http.url, 'tok-ada');
    open.push(again);
    asked++;
    expect((await call(again, 'work')).isError).toBe(true);
  }
  // A session id it makes up reaches no transport: no call runs.
  const forged = await fetch(http.url, {
    method: 'POST',
    headers: {
      authorization: 'Bearer tok-ada',
      'mcp-session-id': '00000000-0000-4000-8000-000000000000',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'work', arguments: {} } }),
  });
  asked++;
  expect(forged.status).toBe(404);
  figure(`mcp session lie: ${ran.count} calls ran out of ${asked} asked (limit 3; 5 new sessions and a forged session id after it)`);
  expect(ran.count).toBe(3);
}, 60_000);

test('without auth info a session is the identity: a client that opens new sessions gets a budget each (docs/mcp.md says so)', async () => {
  const prefix = uniquePrefix('mcp-anon');
  const ran = { count: 0, tokens: 0 };
  const http = await serve(limitOf({ redis, prefix, name: 'tools', limits: { limit: 1, window: '1h' } }), ran);
  for (let i = 0; i < 3; i++) {
    const client = await mcpClient(http.url);
    open.push(client);
    expect((await call(client, 'work')).isError).toBeUndefined();
    expect((await call(client, 'work')).isError).toBe(true);
  }
  expect(ran.count).toBe(3);
}, 60_000);

describe.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)('%s', (algorithm) => {
  test('a tool whose reported cost exceeds its estimate pays the debt off at the limit rate: over a minute, the limit plus one call', async () => {
    const clock = manualClock();
    const ran = { count: 0, tokens: 0 };
    const limit = limitOf({
      redis,
      prefix: uniquePrefix('mcp-debt'),
      name: 'model',
      algorithm,
      limits: { limit: 1000, window: '2s', unit: 'tokens' },
      clock: clock.now,
    });
    const limiter: Limiter = limit.limiter;
    const http = await serve(limit, ran);
    const client = await mcpClient(http.url, 'tok-ada');
    open.push(client);
    // Estimating 1 token, using 5,000: a client calling again as soon as it is told it may.
    const start = clock.now();
    let asked = 0;
    while (clock.now() - start < 60_000 && asked < 200) {
      asked++;
      const r = await call(client, 'work', { used: 5000 });
      await settled();
      if (r.isError) clock.advance(Math.max(1, (r.structuredContent as { retryAfterMs: number }).retryAfterMs));
    }
    figure(
      `mcp debt (${algorithm}): ${ran.count} calls ran out of ${asked} asked, ${ran.tokens} tokens used in 60 s against 1000 per 2 s (30000 at the rate, 1000 burst, 5000 the last call's)`,
    );
    // The settle bound (docs/budgets.md): the rate over the time, one limit, and the last call admitted.
    expect(ran.tokens).toBeLessThanOrEqual(30_000 + 1000 + 5000);
    expect([ran.count, ran.tokens]).toEqual([7, 35_000]);
    expect(limiter.refunds).toBe(true);
  }, 60_000);
});
