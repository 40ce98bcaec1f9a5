// A probe for a bench server's latency tail: node's event-loop delay, GC pauses over 2 ms and ioredis
// command round trips, printed to stderr every 3 s by each server it is loaded into. Load it with
// BENCH_NODE_FLAGS, for example (one framework, 25% load, one rep, results kept out of bench/results):
//
//   BENCH_FRAMEWORKS=hono BENCH_PHASES=latency BENCH_LATENCY_LOADS=25 BENCH_LATENCY_REPS=1 \
//   BENCH_LATENCY_OUT=../../../tmp/probe-latency.json BENCH_NODE_FLAGS="-r $PWD/bench/scripts/loop-monitor.cjs" npm run bench
//
// Its own cost (a timer per command's promise) lands on every server alike; compare servers, not absolutes.
const { monitorEventLoopDelay, PerformanceObserver, createHistogram } = require('node:perf_hooks');

const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
const rtt = createHistogram();
let pauses = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.duration > 2) pauses.push(`${e.detail?.kind ?? e.kind}:${e.duration.toFixed(1)}`);
}).observe({ entryTypes: ['gc'] });

try {
  const loaded = require(require.resolve('ioredis', { paths: [process.cwd(), __dirname] }));
  const Redis = loaded.default ?? loaded;
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, stream) {
    const t = process.hrtime.bigint();
    command.promise?.then(
      () => rtt.record(Number(process.hrtime.bigint() - t) || 1),
      () => undefined,
    );
    return send.call(this, command, stream);
  };
} catch (err) {
  process.stderr.write(`loop-monitor: no ioredis round trips (${err})\n`);
}

const tag = process.argv.slice(2, 5).join('/');
const ms = (ns) => (ns / 1e6).toFixed(2);
setInterval(() => {
  process.stderr.write(
    `loop-monitor ${tag}: loop p50 ${ms(loop.percentile(50))} p99 ${ms(loop.percentile(99))} max ${ms(loop.max)} ms | ` +
      `redis n=${rtt.count} p50 ${ms(rtt.percentile(50))} p99 ${ms(rtt.percentile(99))} max ${ms(rtt.max)} ms | ` +
      `gc pauses > 2 ms: ${pauses.length} (kind:ms ${pauses.slice(0, 6).join(' ')})\n`,
  );
  loop.reset();
  rtt.reset();
  pauses = [];
}, 3000).unref();
