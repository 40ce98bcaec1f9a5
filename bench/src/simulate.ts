import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { createLimiter, type AlgorithmName } from '../../packages/core/src';
import { stateKey } from '../../packages/core/src/scripts/keys';
import { encodeIdentifier } from '../../packages/core/src/scripts/keys';
import { ALGORITHMS } from '../../packages/core/src/scripts/algorithms';
import { startRedis } from '../../packages/testing/src';
import { renderChart } from './chart';

/*
 * `npm run simulate`: the same bursty trace through all four algorithms (limit 20 per 2 s), drawn into
 * docs/algorithms.svg, and a table of what each admitted, the fullest 2 s window, and Redis MEMORY USAGE
 * per identifier with 3 rules. Time is injected, so the run is deterministic and takes a second.
 */
const NAMES: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];
const WINDOW = 2_000;
const LIMIT = 20;
const T0 = 1_800_000_000_000; // a multiple of 2,000 ms: window boundaries fall on whole seconds of the trace
const SPAN = 12_000;
const BIN = 100;

/** Offsets (ms) of requests: steady, the boundary burst (20 before 4 s, 20 after), a flood, a trickle. */
function trace(): number[] {
  const t: number[] = [];
  for (let x = 0; x < 3_000; x += 200) t.push(x);
  for (let i = 0; i < 20; i++) t.push(3_900 + i * 5, 4_000 + i * 5);
  for (let x = 6_000; x < 9_000; x += 25) t.push(x);
  for (let x = 9_000; x < SPAN; x += 300) t.push(x);
  return t.sort((a, b) => a - b);
}

function bins(times: number[]): number[] {
  const out = new Array<number>(SPAN / BIN).fill(0);
  for (const t of times) out[Math.floor(t / BIN)]!++;
  return out;
}

function fullestWindow(times: number[]): number {
  return Math.max(0, ...times.map((end) => times.filter((t) => t > end - WINDOW && t <= end).length));
}

async function run(algorithm: AlgorithmName, requests: number[]): Promise<number[]> {
  let now = T0;
  const limiter = createLimiter({ prefix: 'sim', name: algorithm, algorithm, limits: { limit: LIMIT, window: WINDOW }, clock: () => now });
  const admitted: number[] = [];
  for (const t of requests) {
    now = T0 + t;
    if ((await limiter.check('ip:192.0.2.1')).allowed) admitted.push(t);
  }
  await limiter.close();
  return admitted;
}

/** MEMORY USAGE of one identifier's state after 100 requests over a minute, with 3 rules. */
async function memoryUsage(redis: Redis, algorithm: AlgorithmName): Promise<number> {
  let now = T0;
  const limits = [
    { limit: 10, window: '1s' },
    { limit: 100, window: '1m' },
    { limit: 1000, window: '1h' },
  ];
  const limiter = createLimiter({ redis, prefix: 'mem', name: algorithm, algorithm, limits, clock: () => now });
  for (let i = 0; i < 100; i++) {
    now = T0 + i * 600;
    await limiter.check('ip:192.0.2.1');
  }
  await limiter.close();
  const key = stateKey('mem', algorithm, ALGORITHMS[algorithm].tag, encodeIdentifier('ip:192.0.2.1'));
  return Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
}

async function main(): Promise<void> {
  const requests = trace();
  const results = new Map<AlgorithmName, number[]>();
  for (const name of NAMES) results.set(name, await run(name, requests));

  const server = await startRedis();
  const redis = new Redis(server.url);
  const memory = new Map<AlgorithmName, number>();
  try {
    for (const name of NAMES) memory.set(name, await memoryUsage(redis, name));
  } finally {
    redis.disconnect();
    await server.stop();
  }

  const docs = join(__dirname, '..', '..', 'docs');
  mkdirSync(docs, { recursive: true });
  const lanes = NAMES.map((name) => ({ label: name, admitted: bins(results.get(name)!) }));
  const marks = Array.from({ length: SPAN / WINDOW + 1 }, (_, i) => i * WINDOW);
  writeFileSync(
    join(docs, 'algorithms.svg'),
    renderChart(`${requests.length} requests, limit ${LIMIT} per 2 s, one identifier`, bins(requests), lanes, BIN, marks),
  );

  const rows = NAMES.map((name) => {
    const admitted = results.get(name)!;
    const burst = admitted.filter((t) => t >= 3_900 && t < 4_100).length;
    return {
      algorithm: name,
      admitted: admitted.length,
      'boundary burst (of 40)': burst,
      'fullest 2 s': fullestWindow(admitted),
      'MEMORY USAGE (3 rules)': memory.get(name),
    };
  });
  process.stdout.write(`offered ${requests.length} requests; picture written to docs/algorithms.svg\n`);
  console.table(rows);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
