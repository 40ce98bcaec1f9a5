import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { wrkPost } from './http/load';
import { commandLine } from './lib/command-line';
import { startBenchRedis, startPinnedServer } from './lib/machine';
import { thisHost } from './lib/host';
import { envInt, fmt, median } from './lib/stats';

/*
 * `npm run bench:graphql`: an operation of 100 limited field selections (`posts(first: 100) { id author
 * { name } }`, Post.author limited) on GraphQL Yoga with no limits, with @floodgate/graphql (one reserve per
 * operation, one settle when the actual tally differs from the estimate) and with @envelop/rate-limiter on
 * its Redis store (a read and a write per limited resolver call). Operations per second at CONCURRENCY
 * connections of wrk (beside Redis on LOAD_CORE), each server in a process of its own pinned to SERVER_CORE; Redis
 * commands per operation as the server sent them (a script call is one, whatever it runs). Median of BENCH_REPS (5) runs of BENCH_SECONDS (5) each
 * (the ratio to no limits: the median of each rep's ratio to the no-limits run of the same rep),
 * cases interleaved per rep. Writes bench/results/graphql.json.
 */
const SECONDS = envInt('BENCH_SECONDS', 5);
const REPS = envInt('BENCH_REPS', 5);
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 32);
const CASES = ['none', 'floodgate', 'envelop-rate-limiter'] as const;
const BODY = JSON.stringify({ query: '{ posts(first: 100) { id author { name } } }' });

/** Operations answered 200 and the rest, over CONCURRENCY connections for `seconds` (wrk: little CPU beside Redis). */
async function load(port: number, seconds: number): Promise<{ ops: number; failed: number }> {
  const r = await wrkPost(port, '/graphql', BODY, seconds, CONCURRENCY);
  return { ops: r.requests - r.non2xx - r.errors, failed: r.non2xx + r.errors };
}

/** A number the server answers at `path`: `/commands` sent to Redis so far, `/cpu` µs used (graphql-server.ts). */
function serverCounter(port: number, path: '/commands' | '/cpu'): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(Number(body)));
    })
      .on('error', reject)
      .end();
  });
}

async function main(): Promise<void> {
  commandLine(
    'npm run bench:graphql',
    'an operation of 100 limited fields on GraphQL Yoga: no limits, @floodgate/graphql, @envelop/rate-limiter on Redis; writes bench/results/graphql.json',
    [
      { env: 'BENCH_SECONDS', default: '5', what: 'seconds of load per measurement' },
      { env: 'BENCH_REPS', default: '5', what: 'interleaved repetitions of the three servers' },
      { env: 'BENCH_CONCURRENCY', default: '32', what: "wrk's open connections" },
    ],
    'BENCH_SECONDS=2 BENCH_REPS=1 npm run bench:graphql',
  );
  const redis = await startBenchRedis();
  const rows: Record<string, { opsPerSecond: number[]; cpuPerOp: number[]; redisCallsPerOp: number[]; failed: number }> = {};
  try {
    for (let rep = 0; rep < REPS; rep++) {
      for (const kind of CASES) {
        const server = await startPinnedServer(join(__dirname, 'graphql-server.ts'), [kind, redis.url]);
        await load(server.port, 3); // warm-up: JIT, connections, scripts loaded (1 s left the JIT of a 1,500 ops/s server cold)
        const before = await serverCounter(server.port, '/commands');
        const cpuBefore = await serverCounter(server.port, '/cpu');
        const { ops, failed } = await load(server.port, SECONDS);
        const cpu = (await serverCounter(server.port, '/cpu')) - cpuBefore;
        const calls = (await serverCounter(server.port, '/commands')) - before;
        server.child.kill('SIGTERM');
        const row = (rows[kind] ??= { opsPerSecond: [], cpuPerOp: [], redisCallsPerOp: [], failed: 0 });
        row.opsPerSecond.push(ops / SECONDS);
        row.cpuPerOp.push(ops > 0 ? cpu / ops : 0);
        row.redisCallsPerOp.push(ops > 0 ? calls / ops : 0);
        row.failed += failed;
        console.log(
          `rep ${rep + 1} ${kind}: ${fmt(ops / SECONDS)} ops/s, ${fmt(ops > 0 ? cpu / ops : 0)} µs of server CPU per op, ${fmt(ops > 0 ? calls / ops : 0, 2)} Redis calls per op${failed ? `, ${failed} failed` : ''}`,
        );
      }
    }
  } finally {
    await redis.stop();
  }
  const results = CASES.map((kind) => ({
    case: kind,
    opsPerSecond: Math.round(median(rows[kind]!.opsPerSecond)),
    // Paired as the HTTP bench pairs: each rep's rate over the limiter-free server's in the same rep, the
    // median of those (the machine drifts between reps by more than the limiter costs: 1,011 to 1,697 ops/s
    // for the same server in one run).
    vsNone: Number(median(rows[kind]!.opsPerSecond.map((ops, rep) => ops / rows['none']!.opsPerSecond[rep]!)).toFixed(3)),
    vsNoneReps: rows[kind]!.opsPerSecond.map((ops, rep) => Number((ops / rows['none']!.opsPerSecond[rep]!).toFixed(3))),
    // The server's own CPU per operation (user + system, µs): what the limiter costs the server's core,
    // whatever wrk and Redis do on the other one; its ratio to no limits is the slowdown a saturated server sees.
    serverCpuUsPerOp: Math.round(median(rows[kind]!.cpuPerOp)),
    cpuVsNone: Number(median(rows[kind]!.cpuPerOp.map((us, rep) => us / rows['none']!.cpuPerOp[rep]!)).toFixed(3)),
    redisCallsPerOp: Number(median(rows[kind]!.redisCallsPerOp).toFixed(2)),
    failed: rows[kind]!.failed,
  }));
  console.table(results);
  const dir = join(__dirname, '..', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'graphql.json'),
    `${JSON.stringify({ host: thisHost(), seconds: SECONDS, reps: REPS, concurrency: CONCURRENCY, operation: JSON.parse(BODY) as unknown, results }, null, 2)}\n`,
  );
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
