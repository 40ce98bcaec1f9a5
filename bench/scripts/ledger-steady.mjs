// CPU per check of a long-running process under `failure: 'open'`, whose ledger (engine/uncounted.ts) notes
// what Redis admits a crowded identifier (several of its checks in flight at once). 50 checks in flight over
// 10,000 identifiers crowd one now and then by chance. The rule's window (LEDGER_WINDOW, 1m) is how long a
// note lives; the figure is taken over LEDGER_MEASURE_MS (10,000) after a warm-up of LEDGER_WARM_MS (60,000),
// once notes have come and gone for a window. `closed` runs the same checks without the ledger (nor the
// flood watch), for reference.
//   node bench/scripts/ledger-steady.mjs <build root: . or a snapshot-before.sh dir> [open|closed] [runs, 3]
// Needs a redis-server (REDIS_URL, default redis://127.0.0.1:6379). Pin it (taskset -c 0), alternate builds;
// the figure is µs of the process's CPU per check, the median of the runs, with the share of identifiers noted.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [rootArg, failure = 'open', runsArg = '3'] = process.argv.slice(2);
if (!['open', 'closed'].includes(failure)) throw new Error(`ledger-steady.mjs: 'open' or 'closed', not '${failure}'`);
const root = resolve(rootArg);
const require = createRequire(join(root, 'package.json'));
const core = require(join(root, 'node_modules/@floodgate/core/dist/index.js'));
const { Redis } = require('ioredis');

const IDS = 10_000;
const IN_FLIGHT = 50;
const WINDOW = process.env.LEDGER_WINDOW ?? '1m';
const WARM_MS = Number(process.env.LEDGER_WARM_MS ?? 60_000);
const MEASURE_MS = Number(process.env.LEDGER_MEASURE_MS ?? 10_000);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const us = [];
const noted = [];
for (let run = 0; run < Number(runsArg); run++) {
  const limiter = core.createLimiter({
    redis,
    name: `ledger-steady-${process.pid}-${run}`,
    prefix: 'bench-ledger',
    algorithm: 'sliding-window',
    limits: [{ limit: 1_000_000_000, window: WINDOW }],
    failure,
    timeoutMs: 2_000,
  });
  let checks = 0;
  let phase = 'warm';
  const workers = Array.from({ length: IN_FLIGHT }, async () => {
    while (phase !== 'done') {
      await limiter.check([`client:${(Math.random() * IDS) | 0}`]);
      checks++;
    }
  });
  await new Promise((r) => setTimeout(r, WARM_MS));
  const [from, cpu] = [checks, process.cpuUsage()];
  await new Promise((r) => setTimeout(r, MEASURE_MS));
  const used = process.cpuUsage(cpu);
  us.push((used.user + used.system) / (checks - from));
  // The ledger's size is a test hook of the limiter (open-account.ts), read here as one.
  noted.push(limiter.open?.size ?? 0);
  phase = 'done';
  await Promise.all(workers);
  await limiter.close();
}
redis.disconnect();
const mid = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `${rootArg} (${failure}): µs of CPU per check ${mid(us).toFixed(2)} (runs ${us.map((u) => u.toFixed(2)).join(', ')}), identifiers noted ${mid(noted)} of ${IDS}`,
);
