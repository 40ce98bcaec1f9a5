// CPU and wall time of a check that runs alone: one `limiter.check()` at a time, each awaited before the next
// starts, as the checks of a lightly loaded server arrive (every command settles before the next is sent, so
// nothing is shared between checks: not a write, not a deadline's timer). 1 rule (sliding window, 1 min) over
// 10,000 identifiers; the figure is µs of the process's CPU (and of wall time) per check over LONE_MEASURE_MS
// (5,000) after LONE_WARM_MS (3,000) of warm-up.
//   node bench/scripts/lone-check.mjs <build root: . or a snapshot-before.sh dir>
//   node bench/scripts/lone-check.mjs --floor   # the same, for the cheapest check a peer sends (src/lib/floor.lua)
// --floor runs ioredis alone, one script call at a time on the same 10,000 keys: what a lone check costs the
// process beside it is Floodgate's own part.
// Needs a redis-server (REDIS_URL, default redis://127.0.0.1:6379). Pin it (taskset -c 0) with Redis on the other
// core, and alternate builds: bench/results/ab/deadline-idle.md.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [rootArg = '.'] = process.argv.slice(2);
const floor = rootArg === '--floor';
const root = resolve(floor ? '.' : rootArg);
const require = createRequire(join(root, 'package.json'));
const { Redis } = require('ioredis');

const IDS = 10_000;
const WARM_MS = Number(process.env.LONE_WARM_MS ?? 3_000);
const MEASURE_MS = Number(process.env.LONE_MEASURE_MS ?? 5_000);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const limiter = floor ? undefined : createLimiter();
if (floor)
  redis.defineCommand('floor', {
    numberOfKeys: 1,
    lua: readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../src/lib/floor.lua'), 'utf8'),
  });
const check = floor ? (id) => redis.floor(`bench-lone:floor:{${id}}`, 60_000) : (id) => limiter.check([id]);
let n = 0;
const run = async (ms) => {
  const end = performance.now() + ms;
  let checks = 0;
  while (performance.now() < end) {
    await check(`client:${n++ % IDS}`);
    checks++;
  }
  return checks;
};
await run(WARM_MS);
const [cpu, started] = [process.cpuUsage(), performance.now()];
const checks = await run(MEASURE_MS);
const used = process.cpuUsage(cpu);
const wall = performance.now() - started;
await limiter?.close();
redis.disconnect();
console.log(
  `${rootArg}: µs per lone check: CPU ${((used.user + used.system) / checks).toFixed(2)}, wall ${((wall * 1000) / checks).toFixed(2)} (${checks} checks)`,
);

function createLimiter() {
  const core = require(join(root, 'node_modules/@floodgate/core/dist/index.js'));
  return core.createLimiter({
    redis,
    name: `lone-check-${process.pid}`,
    prefix: 'bench-lone',
    algorithm: 'sliding-window',
    limits: [{ limit: 1_000_000_000, window: '1m' }],
  });
}
