import { LOAD_CORE, pin, startBenchRedis } from '../lib/machine';
import { wrk } from './load';
import { startServers } from './servers';
import type { ShapeName } from './shapes';

/*
 * How a bench server warms up: each variant's rate in consecutive half seconds of load from its start, the
 * baseline first: what the bench's warm-up is sized by (run.ts).
 *
 *   cd bench && node -r ts-node/register/transpile-only src/http/warm-up.ts koa floodgate koa-ratelimit
 *
 * argv: framework, then its variants (baseline is added); BENCH_SHAPE (default equal), BENCH_CHUNKS (12),
 * BENCH_PAUSE (none).
 */
async function main(): Promise<void> {
  const [framework, ...variants] = process.argv.slice(2);
  if (framework === undefined || variants.length === 0) throw new Error('usage: warm-up.ts <framework> <variant>...');
  const shape = (process.env.BENCH_SHAPE ?? 'equal') as ShapeName;
  const chunks = Number(process.env.BENCH_CHUNKS ?? 12);
  // BENCH_PAUSE=4:2000: 2 s without load after the 4th half second (as a server waits while the others warm up).
  const [pauseAfter, pauseMs] = (process.env.BENCH_PAUSE ?? '-1:0').split(':').map(Number) as [number, number];
  pin(process.pid, LOAD_CORE);
  const r = await startBenchRedis();
  try {
    const names = ['baseline', ...variants];
    const servers = await startServers(names.map((variant) => ({ framework, variant, shape, redisUrl: r.url })));
    for (const [i, server] of servers.entries()) {
      const rates: number[] = [];
      for (let k = 0; k < chunks; k++) {
        if (k === pauseAfter) await new Promise((resolve) => setTimeout(resolve, pauseMs));
        rates.push(Math.round((await wrk(server.port, 0.5, 50, shape !== 'hot')).rps));
      }
      process.stdout.write(`${names[i]}: ${rates.join(' ')} req/s\n`);
      server.stop();
    }
  } finally {
    await r.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
