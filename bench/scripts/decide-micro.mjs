// CPU cost of HttpLimiter.decide() for one build, without HTTP: `hot` (a client the block cache denies, answered
// synchronously), `allow` (1 rule x 1 identifier, 64 checks in flight to Redis) or `shared` (as allow, with a
// second identifier, an organisation shared by 8 clients' checks in flight at once: a crowded identifier).
//   node bench/scripts/decide-micro.mjs <build root: . or a snapshot-before.sh dir> <redis port> [hot|allow|shared]
// Pin it (taskset -c 0) and alternate builds, several runs each: the figures are per call, medians of 7 (5).
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [rootArg, port, mode = 'hot'] = process.argv.slice(2);
const root = resolve(rootArg);
const require = createRequire(join(root, 'package.json'));
const core = require(join(root, 'node_modules/@floodgate/core/dist/adapter.js'));
const Redis = require('ioredis');

async function hot(http) {
  for (let i = 0; i < 5; i++) await http.decide({ h: 'hot' }, '127.0.0.1');
  if (http.decide({ h: 'hot' }, '127.0.0.1') instanceof Promise) throw new Error('not answered from the block cache');
  const ns = [];
  for (let r = 0; r < 7; r++) {
    const n = 300_000;
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) http.decide({ h: 'hot' }, '127.0.0.1');
    ns.push(Number(process.hrtime.bigint() - t) / n);
  }
  return `ns per cached denial: ${ns.sort((a, b) => a - b)[3].toFixed(0)}`;
}

async function allow(http) {
  let i = 0;
  const worker = async (n) => {
    for (let k = 0; k < n; k++) await http.decide({ h: String(i++ % 10_000) }, '127.0.0.1');
  };
  await Promise.all(Array.from({ length: 64 }, () => worker(300)));
  const us = [];
  for (let r = 0; r < 5; r++) {
    const c0 = process.cpuUsage();
    await Promise.all(Array.from({ length: 64 }, () => worker(500)));
    const c = process.cpuUsage(c0);
    us.push((c.user + c.system) / (64 * 500));
  }
  return `CPU µs per allowed check: ${us.sort((a, b) => a - b)[2].toFixed(2)}`;
}

(async () => {
  const redis = new Redis(`redis://127.0.0.1:${port}`);
  const limit = mode === 'hot' ? 1 : 1e9;
  const http = core.createHttpLimiter({
    redis,
    name: `micro-${process.pid}`,
    limits: [{ limit, window: 60_000 }],
    identify: mode === 'shared' ? (req) => [`client:${req.h}`, `org:${Number(req.h) % 8}`] : (req) => [`client:${req.h}`],
  });
  console.log(`${rootArg}: ${await (mode === 'hot' ? hot : allow)(http)}`);
  redis.disconnect();
})();
