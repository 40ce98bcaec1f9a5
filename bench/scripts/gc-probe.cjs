// What a bench server's requests leave to V8's young-generation collector: per request, the bytes allocated,
// the bytes that survived a scavenge and the bytes promoted to the old generation, with the scavenges' pauses,
// read from `node --trace-gc-nvp` while wrk loads the server (the `equal` shape's 10,000 random clients).
// A limiter whose per-request objects outlive a scavenge makes every young collection longer, and its
// promoted bytes come back as full collections: both land in the latency tail.
//
//   node bench/scripts/gc-probe.cjs <framework> <variant> [redis url] [node flags...]
//   node bench/scripts/gc-probe.cjs hono floodgate redis://127.0.0.1:6379
//   node bench/scripts/gc-probe.cjs hono floodgate redis://127.0.0.1:6379 --no-allocation-site-pretenuring
//
// GC_PROBE_SECONDS sets the measured seconds (default 6; the warm-up is half of them).
// The server runs pinned to core 0 and wrk to core 1 (as in `npm run bench`); it needs wrk and taskset, and a
// redis-server at the URL (default redis://127.0.0.1:6379). Compare variants on the same machine, not absolutes.
const { fork, execFileSync } = require('node:child_process');
const { mkdtempSync, openSync, readFileSync, statSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const [framework = 'hono', variant = 'floodgate', url = 'redis://127.0.0.1:6379', ...flags] = process.argv.slice(2);
const bench = join(__dirname, '..');
const port = 20_000 + (process.pid % 20_000);
const seconds = Number(process.env.GC_PROBE_SECONDS ?? 6);
if (!Number.isInteger(seconds) || seconds < 2)
  throw new Error(`GC_PROBE_SECONDS must be a whole number of seconds, 2 or more; got ${process.env.GC_PROBE_SECONDS}`);
const dir = mkdtempSync(join(tmpdir(), 'gc-probe-'));
const lua = join(dir, 'load.lua');
// V8 prints its trace to the server's stdout itself, blocking: into a file, never a pipe this process could leave full.
const trace = join(dir, 'trace-gc.txt');
writeFileSync(
  lua,
  "math.randomseed(os.time())\nrequest = function() return wrk.format('GET', '/', { ['x-client-id'] = tostring(math.random(1, 10000)) }) end\n",
);

const child = fork(join(bench, 'src', 'http', 'server.ts'), [framework, variant, JSON.stringify([{ shape: 'equal', port, url }])], {
  cwd: bench,
  execArgv: ['-r', join(bench, '..', 'test', 'ts-register.cjs'), '--trace-gc-nvp', ...flags],
  stdio: ['ignore', openSync(trace, 'w'), 'inherit', 'ipc'],
});
child.once('exit', (code) => code && process.exit(code));
child.once('message', () => {
  execFileSync('taskset', ['-cp', '0', String(child.pid)], { stdio: 'ignore' });
  const wrk = (seconds) =>
    execFileSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}s`, '-s', lua, `http://127.0.0.1:${port}/`]).toString();
  wrk(Math.ceil(seconds / 2)); // warm-up: the JIT, the connections, the scripts loaded
  const from = statSync(trace).size;
  const report = wrk(seconds);
  const requests = Number(/(\d+) requests in/.exec(report)?.[1] ?? 0);
  if (requests === 0) process.stderr.write(report);
  setTimeout(() => {
    const scavenges = readFileSync(trace, 'utf8')
      .slice(from)
      .split('\n')
      .filter((l) => l.includes(' gc=s '));
    const field = (line, key) => Number(new RegExp(`\\b${key.replace('.', '\\.')}=([\\d.]+)`).exec(line)?.[1] ?? 0);
    const sum = (key) => scavenges.reduce((a, l) => a + field(l, key), 0);
    const pauses = scavenges.map((l) => field(l, 'pause')).sort((a, b) => a - b);
    const perRequest = (key) => Math.round(sum(key) / requests);
    console.log(
      `${framework}/${variant}${flags.length ? ` ${flags.join(' ')}` : ''}: ${requests} requests in ${seconds} s, ` +
        `per request: allocated ${perRequest('allocated')} B, survived a scavenge ${perRequest('new_space_survived')} B, ` +
        `promoted ${perRequest('promoted')} B; ${scavenges.length} scavenges, pause p50 ${pauses[pauses.length >> 1] ?? 0} ms, ` +
        `max ${pauses.at(-1) ?? 0} ms, total ${sum('pause').toFixed(0)} ms`,
    );
    child.kill('SIGTERM');
  }, 300);
});
