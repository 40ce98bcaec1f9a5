// CPU cost of a check on a full memory store, for one build, in two cases:
//   new   a client that rotates identifiers (a new one every check) keeps the store at its bound
//         (`memory.maxKeys`), so every check evicts the least recently used identifier;
//   busy  two busy clients take turns among `maxKeys` other identifiers the store holds;
//   lease two busy clients take a concurrency lease and release it, in turns, while `maxKeys` other
//         identifiers hold a lease each (createConcurrencyLimiter without Redis).
//   node bench/scripts/bound-micro.mjs <build root: . or a snapshot-before.sh dir> [new|busy|lease] [maxKeys, 100000]
// Pin it (taskset -c 0) and alternate builds; the figure is µs per check, the median of 5 runs of 50,000.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [rootArg, mode = 'new', maxArg = '100000'] = process.argv.slice(2);
if (!['new', 'busy', 'lease'].includes(mode)) throw new Error(`bound-micro.mjs: mode 'new', 'busy' or 'lease', not '${mode}'`);
const root = resolve(rootArg);
const require = createRequire(join(root, 'package.json'));
const core = require(join(root, 'node_modules/@floodgate/core/dist/index.js'));

const maxKeys = Number(maxArg);
if (mode === 'lease') {
  const leases = core.createConcurrencyLimiter({ name: 'bound', max: 5, leaseMs: '10m', memory: { maxKeys } });
  for (let i = 0; i < maxKeys - 2; i++) await leases.lease([`client:${i}`]);
  const us = [];
  for (let r = 0; r < 5; r++) {
    const count = 20_000;
    const t = process.hrtime.bigint();
    for (let i = 0; i < count; i++) await (await leases.lease([i % 2 === 0 ? 'busy:a' : 'busy:b'])).release();
    us.push(Number(process.hrtime.bigint() - t) / 1_000 / count);
  }
  console.log(
    `${rootArg}: µs per lease and release of two busy clients among ${maxKeys - 2} leases: ${us.sort((a, b) => a - b)[2].toFixed(2)}`,
  );
  process.exit(0);
}
const limiter = core.createLimiter({ name: 'bound', limits: [{ limit: 1e9, window: 60_000 }], memory: { maxKeys } });
let n = 0;
// Fill the store to its bound (state keys: one per identifier).
for (let i = 0; i < maxKeys; i++) await limiter.check(`client:${n++}`);
const identifier = mode === 'new' ? () => `client:${n++}` : (i) => (i % 2 === 0 ? 'busy:a' : 'busy:b');
const us = [];
for (let r = 0; r < 5; r++) {
  const count = 50_000;
  const t = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await limiter.check(identifier(i));
  us.push(Number(process.hrtime.bigint() - t) / 1_000 / count);
}
const what = mode === 'new' ? 'a new identifier at the bound' : `two busy clients among ${maxKeys} identifiers`;
console.log(`${rootArg}: µs per check of ${what} (maxKeys ${maxKeys}): ${us.sort((a, b) => a - b)[2].toFixed(2)}`);
