import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { manualClock, settled } from '@floodgate/core/testing';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { createHttpServer } from '../src/app';

// The MCP example's server in this process, on the test Redis, over Streamable HTTP with the SDK's client.
const redis = connect();
afterAll(closeClients);

test('the example: an API key is required, summarize is settled in tokens, the 11th call of a tool in a minute is a tool error', async () => {
  const { server, limits } = createHttpServer({
    redis,
    prefix: uniquePrefix('example-mcp'),
    keys: { 'k-1': 'ada' },
    clock: manualClock().now,
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  const client = new Client({ name: 'smoke', version: '1.0.0' });
  try {
    expect((await fetch(new URL('/', url))).status).toBe(200);
    const anonymous = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: 'Bearer k-1' } } }));
    const summary = (await client.callTool({
      name: 'summarize',
      arguments: { text: 'one two three four', max_words: 300 },
    })) as CallToolResult;
    expect(summary.content).toEqual([{ type: 'text', text: 'one two three four' }]);
    await settled();
    const tokens = (await limits.limiter.peek('identity:user:ada', { cost: { requests: 0, tokens: 0 } })).states.find(
      (s) => s.unit === 'tokens',
    );
    expect(tokens?.remaining).toBe(2000 - 4);
    const times: CallToolResult[] = [];
    for (let i = 0; i < 11; i++) times.push((await client.callTool({ name: 'time' })) as CallToolResult);
    expect(times.map((r) => r.isError ?? false)).toEqual([...Array<boolean>(10).fill(false), true]);
    expect(times[10]!.structuredContent).toMatchObject({ error: 'rate_limited', tool: 'time', limit: 10 });
  } finally {
    await client.close();
    server.closeAllConnections();
    server.close();
    await limits.close();
  }
});
