import { freePort } from '../../../packages/testing/src/processes';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { basename } from 'node:path';

/*
 * Process placement and Redis for the benchmarks. The machine has two cores: the code under test
 * (the Node server, or the core benchmark's Node process) runs on SERVER_CORE; Redis and the load
 * generator share LOAD_CORE. Pinning is what makes runs comparable on a noisy box.
 */
export const SERVER_CORE = Number(process.env.BENCH_SERVER_CORE ?? 0);
export const LOAD_CORE = Number(process.env.BENCH_LOAD_CORE ?? Math.min(1, cpus().length - 1));

/** Pins every thread of `pid` (libuv pool and V8 helpers too: `-a`) to one core. */
export function pin(pid: number, core: number): void {
  execFileSync('taskset', ['-a', '-cp', String(core), String(pid)], { stdio: 'ignore' });
}

/**
 * Lets `pid` run on every core again: a child inherits its parent's core, and the bench's own process is
 * pinned to LOAD_CORE, so the servers it starts at once would all load their code on that one core.
 */
export function unpin(pid: number): void {
  execFileSync('taskset', ['-a', '-cp', `0-${cpus().length - 1}`, String(pid)], { stdio: 'ignore' });
}

export { freePort };

export interface BenchRedis {
  port: number;
  /** The redis-server's process id (valgrind's, when it runs under one). */
  pid: number;
  url: string;
  /** One redis-cli call; returns its stdout. */
  cli(...args: string[]): string;
  stop(): Promise<void>;
}

function waitFor(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error('redis-server did not start'));
      else setTimeout(tick, 50);
    };
    tick();
  });
}

/**
 * A private redis-server on a free port, pinned to LOAD_CORE, with persistence off. Never :6379. `wrapper`:
 * a command that runs it (valgrind and its arguments), which taskset execs in the same process.
 */
export async function startBenchRedis(wrapper: readonly string[] = [], startMs = 10_000): Promise<BenchRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'taskset',
    [
      '-c',
      String(LOAD_CORE),
      ...wrapper,
      'redis-server',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  );
  const cli = (...args: string[]): string =>
    execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  await waitFor(() => {
    try {
      return cli('PING') === 'PONG';
    } catch {
      return false;
    }
  }, startMs);
  return {
    port,
    pid: child.pid!,
    url: `redis://127.0.0.1:${port}`,
    cli,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Redis's own CPU time so far, user + system (`INFO cpu`), in µs: what a script's weight costs its core. */
export function redisCpuMicros(r: Pick<BenchRedis, 'cli'>): number {
  const info = r.cli('INFO', 'cpu');
  return (Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1])) * 1e6;
}

/** Parses `INFO commandstats` into calls per command (lower case), e.g. { evalsha: 12, hgetall: 24 }. */
export function commandCalls(info: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!.toLowerCase(), Number(m[2]));
  return calls;
}

/** Parses `INFO commandstats` into microseconds spent per command (lower case), e.g. { evalsha: 3 }. */
export function commandUsec(info: string): Map<string, number> {
  const usec = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) usec.set(m[1]!.toLowerCase(), Number(m[2]));
  return usec;
}

/**
 * Starts `script` (TypeScript, run as the benches run) with `args` in a process of its own pinned to
 * SERVER_CORE; resolves once it prints `port <n>`.
 */
export async function startPinnedServer(script: string, args: readonly string[]): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn('taskset', ['-c', String(SERVER_CORE), process.execPath, '-r', 'ts-node/register/transpile-only', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /port (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${basename(script)} ${args.join(' ')} exited (${code})`)));
  });
  return { port, child };
}
