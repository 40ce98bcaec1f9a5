// `npm start`: the example MCP server on http://localhost:PORT/mcp (3000), counting in the Redis at REDIS_URL
// (redis://127.0.0.1:6379). API_KEYS=<key>=<subject>,... the keys it accepts (demo-key=demo); PREFIX=<name>
// to share one Redis; STORE=memory to try it without Redis. `node dist/server.js --stdio` serves one client
// on stdin and stdout instead (as an MCP client's "command" starts it), counted against the user it runs as.
import type { AddressInfo } from 'node:net';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Redis } from 'ioredis';
import { createHttpServer, createLimits, createMcpServer } from './app';

const { PORT = '3000', REDIS_URL = 'redis://127.0.0.1:6379', STORE, PREFIX, API_KEYS } = process.env;
const redis = STORE === 'memory' ? undefined : new Redis(REDIS_URL);
const store = redis ? `Redis at ${REDIS_URL}` : 'in-memory, this process only';

if (process.argv.includes('--stdio')) {
  // stdout is the protocol's: what this process says goes to stderr.
  const limits = createLimits({ redis, prefix: PREFIX });
  const server = createMcpServer(limits);
  server.server.onclose = () => {
    void limits.close().then(() => redis?.disconnect());
  };
  void server.connect(new StdioServerTransport()).then(() => console.error(`Floodgate MCP example on stdio (store: ${store})`));
} else {
  const keys = API_KEYS
    ? Object.fromEntries(API_KEYS.split(',').map((pair) => pair.split('=').map((s) => s.trim()) as [string, string]))
    : undefined;
  const { server, limits } = createHttpServer({ redis, prefix: PREFIX, keys });
  server.on('error', (err: NodeJS.ErrnoException) => {
    const port = Number(PORT);
    console.error(
      err.code === 'EADDRINUSE' ? `port ${port} is in use; set PORT=... to use another one (PORT=${port + 1} npm start)` : err.message,
    );
    process.exit(1);
  });
  server.listen(Number(PORT), () => {
    const { port } = server.address() as AddressInfo;
    console.log(`Floodgate MCP example on http://localhost:${port} (store: ${store}); the MCP endpoint is /mcp`);
  });

  // Ctrl-C or SIGTERM: stop listening, drop connections, close the limiter and Redis, exit 0.
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close(() => {
      void limits.close().then(() => {
        redis?.disconnect();
        process.exit(0);
      });
    });
    server.closeAllConnections();
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
}
