// Two builds' lone checks, interleaved in one process: each build's core checks against its own redis-server
// (REDIS_A_URL, REDIS_B_URL; default ports 6390 and 6391), one check at a time, in alternating blocks of
// LONE_AB_BLOCK (3,000) checks for LONE_AB_ROUNDS (60) rounds after a warm-up, so that a machine whose speed
// drifts from minute to minute (a shared one) moves both sides alike. Prints each side's CPU per check in this
// process and in its Redis (INFO cpu, user + sys). Pin it to one core and both servers to the other.
//   node bench/scripts/lone-ab.mjs <build A root> <build B root>   (a root: . or a snapshot-before.sh dir)
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const roots = process.argv.slice(2, 4);
if (roots.length !== 2) throw new Error('usage: lone-ab.mjs <build A root> <build B root>');
const BLOCK = Number(process.env.LONE_AB_BLOCK ?? 3_000);
const ROUNDS = Number(process.env.LONE_AB_ROUNDS ?? 60);
const urls = [process.env.REDIS_A_URL ?? 'redis://127.0.0.1:6390', process.env.REDIS_B_URL ?? 'redis://127.0.0.1:6391'];

const redisCpu = (url) => {
  const { hostname, port } = new URL(url);
  const info = execFileSync('redis-cli', ['-h', hostname, '-p', port, 'INFO', 'cpu'], { encoding: 'utf8' });
  return [...info.matchAll(/used_cpu_(?:user|sys):([\d.]+)/g)].reduce((sum, m) => sum + Number(m[1]), 0) * 1e6;
};
const sides = roots.map((arg, i) => {
  const root = resolve(arg);
  const require = createRequire(join(root, 'package.json'));
  const { createLimiter } = require(join(root, 'node_modules/@floodgate/core/dist/index.js'));
  const { Redis } = require('ioredis');
  const redis = new Redis(urls[i]);
  const limiter = createLimiter({
    redis,
    name: `lone-ab-${process.pid}-${i}`,
    prefix: 'bench-lone-ab',
    algorithm: 'sliding-window',
    limits: [{ limit: 1_000_000_000, window: '1m' }],
  });
  return { arg, url: urls[i], redis, limiter, cpu: 0, checks: 0, redis0: 0 };
});
let n = 0;
const run = async (side, checks) => {
  for (let i = 0; i < checks; i++) await side.limiter.check([`client:${n++ % 10_000}`]);
};
for (const side of sides) await run(side, 20 * BLOCK);
for (const side of sides) side.redis0 = redisCpu(side.url);
for (let round = 0; round < ROUNDS; round++) {
  for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
    const before = process.cpuUsage();
    await run(side, BLOCK);
    const used = process.cpuUsage(before);
    side.cpu += used.user + used.system;
    side.checks += BLOCK;
  }
}
for (const side of sides) {
  const redis = (redisCpu(side.url) - side.redis0) / side.checks;
  console.log(
    `${side.arg}: µs per lone check: CPU ${(side.cpu / side.checks).toFixed(2)}, Redis ${redis.toFixed(2)} (${side.checks} checks)`,
  );
  await side.limiter.close();
  side.redis.disconnect();
}
