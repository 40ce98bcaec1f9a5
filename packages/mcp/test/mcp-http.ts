import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/*
 * A Streamable HTTP MCP server on a real socket, as the SDK's own stateful example serves one: a transport
 * (and an McpServer from `makeServer`) per session, found again by the `mcp-session-id` header. A bearer
 * token from `tokens` is the caller's auth info, with the token's subject in `extra.sub` (what a JWT
 * verifier puts there); an unknown token is a 401. Clients are the SDK's own Client over its HTTP transport.
 */
export interface McpHttp {
  url: URL;
  /** Sessions the server has opened. */
  sessions(): number;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
}

export async function serveMcp(makeServer: () => McpServer, tokens: Record<string, string> = {}): Promise<McpHttp> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers: McpServer[] = [];
  const http: Server = createServer((req, res) => {
    void (async () => {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (bearer !== undefined) {
        const sub = tokens[bearer];
        if (sub === undefined) return void res.writeHead(401).end();
        Object.assign(req, { auth: { token: bearer, clientId: 'test-client', scopes: [], extra: { sub } } });
      }
      const body = req.method === 'POST' ? await bodyOf(req) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (transport === undefined) {
        if (sid !== undefined || !isInitializeRequest(body)) {
          res.writeHead(sid === undefined ? 400 : 404, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no such session' }, id: null }));
        }
        const fresh = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (id) => void transports.set(id, fresh),
        });
        const server = makeServer();
        servers.push(server);
        await server.connect(fresh);
        transport = fresh;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    sessions: () => transports.size,
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** The SDK's client, connected over Streamable HTTP (a session of its own), with `token` as its bearer token. */
export async function mcpClient(url: URL, token?: string): Promise<Client> {
  const client = new Client({ name: 'floodgate-test', version: '1.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

/** A tool call's result (the SDK's client types it loosely). */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}
