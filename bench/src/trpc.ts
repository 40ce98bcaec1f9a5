// `npm run bench:trpc`: tRPC on its standalone server with no limiter and with @floodgate/trpc, and the
// Redis calls a batch costs. Writes bench/results/trpc.json (BENCH_TRPC_OUT), which `npm run bench:report`
// quotes in docs/performance.md and docs/trpc.md. The server and the load share one process (tRPC's
// client is the load): compare the two lines of one run, not the figures with npm run bench's.
//   BENCH_TRPC_SECONDS=5 (per measurement), BENCH_TRPC_BATCH=10 (calls per HTTP request), BENCH_TRPC_CLIENTS=16,
//   BENCH_TRPC_OUT=trpc.json (in bench/results)
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { Redis } from 'ioredis';
import { rateLimit, rateLimitContext, rateLimitResponseMeta } from '@floodgate/trpc';
import { commandLine } from './lib/command-line';
import { commandCalls, startBenchRedis } from './lib/machine';
import { thisHost } from './lib/host';

const SECONDS = Number(process.env.BENCH_TRPC_SECONDS ?? 5);
const BATCH = Number(process.env.BENCH_TRPC_BATCH ?? 10);
const CLIENTS = Number(process.env.BENCH_TRPC_CLIENTS ?? 16);

type Context = ReturnType<typeof rateLimitContext>;
const t = initTRPC.context<Context>().create();

function routerWith(limited: boolean, redis: Redis, prefix: string) {
  const procedure = limited
    ? t.procedure.use(rateLimit<Context>({ redis, prefix, limits: { limit: 1_000_000_000, window: '1h' }, timeoutMs: 10_000 }))
    : t.procedure;
  return t.router({ hit: procedure.query(() => 'ok') });
}

async function serve(limited: boolean, redis: Redis, prefix: string) {
  const server = createHTTPServer({
    router: routerWith(limited, redis, prefix),
    createContext: ({ req }) => rateLimitContext(req),
    responseMeta: rateLimitResponseMeta,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => (server.closeAllConnections(), server.close()) };
}

/** Calls per second: CLIENTS loops, each sending batches of BATCH calls, for SECONDS. */
async function throughput(url: string): Promise<number> {
  const end = Date.now() + SECONDS * 1000;
  let calls = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const client = createTRPCClient<ReturnType<typeof routerWith>>({ links: [httpBatchLink({ url })] });
      while (Date.now() < end) {
        await Promise.all(Array.from({ length: BATCH }, () => client.hit.query()));
        calls += BATCH;
      }
    }),
  );
  return calls / SECONDS;
}

/** Redis script calls (EVALSHA and EVAL) one batch of `n` calls costs, from INFO commandstats. */
async function redisCallsPerBatch(url: string, cli: (...args: string[]) => string, n: number): Promise<number> {
  const client = createTRPCClient<ReturnType<typeof routerWith>>({ links: [httpBatchLink({ url })] });
  await client.hit.query(); // the script loaded
  const scripts = (): number => {
    const calls = commandCalls(cli('INFO', 'commandstats'));
    return (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
  };
  const before = scripts();
  await Promise.all(Array.from({ length: n }, () => client.hit.query()));
  return scripts() - before;
}

async function main(): Promise<void> {
  commandLine(
    'npm run bench:trpc',
    "tRPC's standalone server with no limiter and with @floodgate/trpc, and the Redis script calls a batch costs; writes bench/results/trpc.json",
    [
      { env: 'BENCH_TRPC_SECONDS', default: '5', what: 'seconds per measurement' },
      { env: 'BENCH_TRPC_BATCH', default: '10', what: 'calls per HTTP request (httpBatchLink)' },
      { env: 'BENCH_TRPC_CLIENTS', default: '16', what: 'client loops sending batches' },
      { env: 'BENCH_TRPC_OUT', default: 'trpc.json', what: 'the results file in bench/results (the docs quote trpc.json)' },
    ],
    'BENCH_TRPC_SECONDS=2 npm run bench:trpc',
  );
  const bench = await startBenchRedis();
  const redis = new Redis(bench.url);
  try {
    const plain = await serve(false, redis, 'bench-trpc-plain');
    const without = await throughput(plain.url);
    plain.close();
    const limited = await serve(true, redis, 'bench-trpc');
    const withLimiter = await throughput(limited.url);
    const perBatch: Record<string, number> = {};
    for (const n of [1, 10, 100, 1_000]) perBatch[String(n)] = await redisCallsPerBatch(limited.url, bench.cli, n);
    limited.close();
    const result = {
      date: new Date().toISOString(),
      host: thisHost(),
      seconds: SECONDS,
      batch: BATCH,
      clients: CLIENTS,
      callsPerSecond: { noLimiter: Math.round(without), floodgate: Math.round(withLimiter) },
      redisScriptCallsPerBatch: perBatch,
    };
    const out = join(__dirname, '..', 'results', process.env.BENCH_TRPC_OUT ?? 'trpc.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    redis.disconnect();
    await bench.stop();
  }
}

void main();
