// CPU cost of a check on the memory store once it holds `memory.maxKeys` identifiers, for one build: a client
// that rotates identifiers (a new one every request) keeps the store at its bound, so every check evicts.
//   node bench/scripts/bound-micro.mjs <build root: . or a snapshot-before.sh dir> [maxKeys, 100000 (the default)]
// Pin it (taskset -c 0) and alternate builds; the figure is µs per check, the median of 5 runs.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [rootArg, maxArg = '100000'] = process.argv.slice(2);
const root = resolve(rootArg);
const require = createRequire(join(root, 'package.json'));
const core = require(join(root, 'node_modules/@floodgate/core/dist/index.js'));

const maxKeys = Number(maxArg);
const limiter = core.createLimiter({ name: 'bound', limits: [{ limit: 100, window: 60_000 }], memory: { maxKeys } });
let n = 0;
// Fill the store to its bound (state keys: one per identifier), then go on with new identifiers.
for (let i = 0; i < maxKeys + 1_000; i++) await limiter.check(`client:${n++}`);
const us = [];
for (let r = 0; r < 5; r++) {
  const count = 50_000;
  const t = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await limiter.check(`client:${n++}`);
  us.push(Number(process.hrtime.bigint() - t) / 1_000 / count);
}
console.log(`${rootArg}: µs per check of a new identifier at the bound (${maxKeys}): ${us.sort((a, b) => a - b)[2].toFixed(2)}`);
