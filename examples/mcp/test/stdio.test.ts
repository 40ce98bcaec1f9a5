import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';

/*
 * The example on stdio, as an MCP client's "command" starts it: two server processes of one user (the
 * built dist/server.js --stdio, `npm run test:all` builds it), each with the SDK's stdio client, on the
 * test Redis under one prefix. A call counts against the user the process runs as, so the two processes
 * share one budget: 10 calls a minute of `time` between them.
 */
const server = join(__dirname, '..', 'dist', 'server.js');

test('two stdio server processes of one user share its budget: 10 calls of a tool run between them, then tool errors', async () => {
  if (!existsSync(server)) throw new Error('examples/mcp is not built: run `npx turbo run build --filter=@floodgate/example-mcp...`');
  const env = { ...(process.env as Record<string, string>), REDIS_URL: testRedisUrl(), PREFIX: uniquePrefix('example-mcp-stdio') };
  const clients = [new Client({ name: 'a', version: '1.0.0' }), new Client({ name: 'b', version: '1.0.0' })];
  try {
    for (const client of clients) {
      await client.connect(new StdioClientTransport({ command: process.execPath, args: [server, '--stdio'], env, stderr: 'pipe' }));
    }
    const results: CallToolResult[] = [];
    // Alternating processes, one call at a time: 21 calls of a tool limited to 10 a minute cannot all run.
    for (let i = 0; i < 21; i++) results.push((await clients[i % 2]!.callTool({ name: 'time' })) as CallToolResult);
    const ran = results.filter((r) => !r.isError).length;
    expect(results.slice(0, 10).every((r) => !r.isError)).toBe(true);
    expect(ran).toBeLessThan(21);
    // Both processes were denied: the budget is the user's, not a process's.
    expect([results.some((r, i) => r.isError && i % 2 === 0), results.some((r, i) => r.isError && i % 2 === 1)]).toEqual([true, true]);
    expect(results.find((r) => r.isError)?.structuredContent).toMatchObject({ error: 'rate_limited', tool: 'time', limit: 10 });
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}, 60_000);
