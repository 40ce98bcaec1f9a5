import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOAD_CORE } from '../lib/machine';
import { CLIENTS, HEADER } from './shapes';

/*
 * Load with wrk (C, one thread): far less CPU per request than a Node load generator, which matters
 * because it shares its core with Redis. A Lua script picks the client id and prints a JSON summary.
 */
export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx/3xx (429s in the hot shape). */
  non2xx: number;
  /** Socket errors and timeouts: a run with any is suspect. */
  errors: number;
}

const DONE = `
done = function(s, latency, requests)
  local e = s.errors
  io.write(string.format('JSON {"requests":%d,"us":%d,"non2xx":%d,"errors":%d,"p50":%d,"p99":%d}\\n',
    s.requests, s.duration, e.status, e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
`;
const LUA = `
local random = os.getenv('BENCH_RANDOM') == '1'
math.randomseed(os.time())
request = function()
  local id = random and tostring(math.random(1, ${CLIENTS})) or 'hot'
  return wrk.format('GET', '/', { ['${HEADER}'] = id })
end
${DONE}`;
const scripts = new Map<string, string>();

/** The file of a wrk script, written once per process. */
function scriptFile(lua: string): string {
  let path = scripts.get(lua);
  if (path === undefined) {
    path = join(mkdtempSync(join(tmpdir(), 'floodgate-bench-')), 'load.lua');
    writeFileSync(path, lua);
    scripts.set(lua, path);
  }
  return path;
}

/**
 * wrk sees a SIGINT on its next 100 ms tick (its stop check runs with its rate sampling), 50 ms later on
 * average: the signal goes that much early, so a run lasts `seconds` on average instead of 50 ms more.
 */
const STOP_LAG_MS = 50;

/**
 * wrk (one thread, on LOAD_CORE) running `lua` against `url` for `seconds` over `connections` connections.
 * wrk's -d takes whole seconds; a fraction (the smoke run's) is a longer -d cut short with SIGINT, on which
 * wrk stops and reports as at its end, its rate over the time it really ran.
 */
function runWrk(lua: string, url: string, seconds: number, connections: number, env: Record<string, string> = {}): Promise<LoadResult> {
  const whole = Number.isInteger(seconds);
  const d = whole ? seconds : Math.ceil(seconds) + 1;
  const args = ['-c', String(LOAD_CORE), 'wrk', '-t1', `-c${connections}`, `-d${d}s`, '--timeout', '5s', '-s', scriptFile(lua), url];
  return new Promise((resolve, reject) => {
    // taskset execs wrk in its own process: the signal reaches wrk.
    const child = execFile('taskset', args, { env: { ...process.env, ...env }, timeout: (d + 20) * 1000 }, (err, stdout) => {
      clearTimeout(cut);
      if (err) return reject(err);
      const line = stdout.split('\n').find((l) => l.startsWith('JSON '));
      if (!line) return reject(new Error(`wrk printed no summary:\n${stdout}`));
      const j = JSON.parse(line.slice(5)) as { requests: number; us: number; non2xx: number; errors: number; p50: number; p99: number };
      const secs = j.us / 1e6;
      resolve({
        requests: j.requests,
        seconds: secs,
        rps: j.requests / secs,
        p50Ms: j.p50 / 1000,
        p99Ms: j.p99 / 1000,
        non2xx: j.non2xx,
        errors: j.errors,
      });
    });
    const cut = whole ? undefined : setTimeout(() => child.kill('SIGINT'), Math.max(0, seconds * 1000 - STOP_LAG_MS));
  });
}

/** GET / as one client ('hot') or many (`random`), the shapes of `npm run bench`. */
export function wrk(port: number, seconds: number, connections: number, random: boolean): Promise<LoadResult> {
  return runWrk(LUA, `http://127.0.0.1:${port}/`, seconds, connections, { BENCH_RANDOM: random ? '1' : '0' });
}

/** The same JSON POST to `path`, over and over. */
export function wrkPost(port: number, path: string, body: string, seconds: number, connections: number): Promise<LoadResult> {
  const lua = `
wrk.method = 'POST'
wrk.body = ${JSON.stringify(body)}
wrk.headers['content-type'] = 'application/json'
${DONE}`;
  return runWrk(lua, `http://127.0.0.1:${port}${path}`, seconds, connections);
}

/** `1700000000.123456 [0 127.0.0.1:50000] "evalsha" ...` -> source ('lua' inside scripts) and command. */
export function parseMonitorLine(line: string): { source: string; command: string } | undefined {
  const m = /^\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"/.exec(line);
  return m ? { source: m[1]!, command: m[2]!.toLowerCase() } : undefined;
}

/** A MONITOR trace of the commands sent to Redis, started and stopped around some load. */
export interface Trace {
  /** Stops the trace once `requests` requests have been answered and every command Redis ran before now is logged. */
  stop(requests: number): Promise<{ wire: Map<string, number>; lua: number; requests: number }>;
}

/**
 * How long a limiter may still be sending a request's commands after its answer (one it does not await, as
 * some peers' expiry updates): they are counted, as they belong to answered requests.
 */
const LATE_MS = 25;
let markers = 0;

/**
 * Starts a MONITOR trace; resolves once MONITOR is on (it answers OK), so every later command is logged.
 * MONITOR tags the commands a Lua script runs with `[0 lua]`: those are counted apart, as script-internal.
 * The stop is exact too: a marker (an ECHO) sent after the load comes back through the monitor after every
 * command Redis ran before it, so no sleep has to be long enough for the log to catch up.
 */
export async function startTrace(redisPort: number): Promise<Trace> {
  const monitor = spawn('redis-cli', ['-p', String(redisPort), 'monitor'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const marker = `floodgate-bench-trace-end-${process.pid}-${++markers}`;
  let buffered = '';
  const wire = new Map<string, number>();
  let lua = 0;
  let on: () => void = () => undefined;
  let ended: () => void = () => undefined;
  const consume = (line: string): void => {
    if (line === 'OK') return on();
    if (line.includes(marker)) return ended();
    const m = parseMonitorLine(line);
    if (m === undefined) return;
    if (m.source === 'lua') lua++;
    else wire.set(m.command, (wire.get(m.command) ?? 0) + 1);
  };
  const exited = new Promise<void>((resolve) => monitor.once('exit', () => resolve()));
  const failed = exited.then(() => {
    throw new Error(`redis-cli monitor on port ${redisPort} exited before the trace ended`);
  });
  failed.catch(() => undefined);
  monitor.stdout.setEncoding('utf8');
  monitor.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    lines.forEach(consume);
  });
  await Promise.race([new Promise<void>((resolve) => (on = resolve)), failed]);
  return {
    stop: async (requests) => {
      await new Promise((r) => setTimeout(r, LATE_MS));
      const seen = new Promise<void>((resolve) => (ended = resolve));
      execFile('redis-cli', ['-p', String(redisPort), 'ECHO', marker], () => undefined);
      await Promise.race([seen, failed]);
      monitor.kill('SIGTERM');
      await exited;
      return { wire, lua, requests };
    },
  };
}
