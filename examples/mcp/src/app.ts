import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { rateLimit, type McpRateLimit } from '@floodgate/mcp';

/*
 * An MCP server with two tools, limited per caller and per tool:
 *   - every caller: 30 tool calls and 2,000 tokens a minute, over every tool;
 *   - every caller on one tool: 10 calls a minute;
 *   - `summarize`, model-like: counted at its estimate (max_words tokens) when called, settled at the
 *     tokens its answer used.
 * Over HTTP a caller is its API key's subject (Authorization: Bearer <key>); on stdio, the user the
 * process runs as.
 */

export interface AppOptions {
  redis?: Redis;
  prefix?: string;
  /** API key -> the subject it authenticates. */
  keys?: Record<string, string>;
  /** Tests only: windows on a clock the test moves (never in production). */
  clock?: () => number;
}

export function createLimits(options: AppOptions): McpRateLimit {
  return rateLimit({
    redis: options.redis,
    prefix: options.prefix,
    clock: options.clock,
    name: 'mcp-tools',
    limits: [
      { limit: 30, window: '1m' },
      { limit: 2000, window: '1m', unit: 'tokens' },
      { limit: 10, window: '1m', for: 'tool' },
    ],
  });
}

/** Your model (here, the first words of the text). */
function summarizeText(text: string, maxWords: number): string {
  return text.split(/\s+/).filter(Boolean).slice(0, maxWords).join(' ');
}

export function createMcpServer(limits: McpRateLimit): McpServer {
  const server = new McpServer({ name: 'floodgate-example', version: '1.0.0' });
  server.registerTool(
    'summarize',
    {
      description: 'Summarizes a text in at most max_words words (metered in tokens)',
      inputSchema: { text: z.string(), max_words: z.number().int().positive().max(500).default(100) },
    },
    limits.tool(
      'summarize',
      ({ text, max_words }) => {
        const summary = summarizeText(text, max_words);
        const tokens = summary.split(' ').filter(Boolean).length;
        return { content: [{ type: 'text', text: summary }], _meta: { usage: { tokens } } };
      },
      {
        cost: ({ max_words }) => ({ requests: 1, tokens: max_words }), // the estimate: the most it can use
        settle: (result) => ({ requests: 1, tokens: Number((result._meta?.usage as { tokens?: number } | undefined)?.tokens ?? 0) }),
      },
    ),
  );
  server.registerTool(
    'time',
    { description: 'The server time' },
    limits.tool('time', () => ({ content: [{ type: 'text', text: new Date().toISOString() }] }), { cost: { requests: 1, tokens: 0 } }),
  );
  return server;
}

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/** The Streamable HTTP endpoint at /mcp: a session per initialize, the caller from its API key. */
export function createHttpServer(options: AppOptions): { server: Server; limits: McpRateLimit } {
  const limits = createLimits(options);
  const keys = options.keys ?? { 'demo-key': 'demo' };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    // A page for a person, or a load balancer's health check.
    if (path === '/' && req.method === 'GET')
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end('MCP endpoint: POST /mcp\n');
    if (path !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const subject = key === undefined ? undefined : keys[key];
    if (subject === undefined) return refuse(res, 401, 'an API key is required: Authorization: Bearer <key>');
    // What the SDK's bearer middleware does: the caller's auth info, read by the tools' limits.
    Object.assign(req, { auth: { token: key, clientId: 'api-key', scopes: [], extra: { sub: subject } } });
    const body = req.method === 'POST' ? await bodyOf(req) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (transport === undefined) {
      if (sid !== undefined) return refuse(res, 404, 'no such session');
      if (!isInitializeRequest(body)) return refuse(res, 400, 'start a session with initialize');
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void sessions.set(id, fresh),
      });
      fresh.onclose = () => {
        if (fresh.sessionId !== undefined) sessions.delete(fresh.sessionId);
      };
      await createMcpServer(limits).connect(fresh);
      transport = fresh;
    }
    await transport.handleRequest(req, res, body);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) refuse(res, 500, err instanceof Error ? err.message : String(err));
      else res.end();
    });
  });
  return { server, limits };
}
