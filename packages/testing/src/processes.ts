import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisServerBinary } from './redis-server';

/*
 * redis-server processes that a test can kill, freeze and restart on the same port. redis-memory-server
 * hides its process and picks a new port on restart, so fault, Sentinel and Cluster tests use these.
 */

/** Binds `port` on loopback and releases it: the port it got (0: any free one), or undefined if taken. */
function bindOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : undefined));
    });
  });
}

/** A free loopback port: bind to 0, read the port, release it. */
export async function freePort(): Promise<number> {
  const port = await bindOnce(0);
  if (port === undefined) throw new Error('no free loopback port');
  return port;
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = netConnect({ port, host: '127.0.0.1' });
    const finish = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => finish(false));
    sock.on('error', () => finish(false));
    // A listener that closes without answering (not Redis, or one refusing clients) is no PONG either.
    sock.on('close', () => finish(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => finish(d.toString().startsWith('+PONG')));
  });
}

/**
 * A port for a Cluster node: Redis refuses one above 55535 (its cluster bus listens on port + 10,000), and
 * the bus port must be free too. freePort() alone gave either now and then: the node exited at start.
 */
export async function clusterNodePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = await freePort();
    if (port <= 55_535 && (await bindOnce(port + 10_000)) !== undefined) return port;
  }
  throw new Error('no free port with a free cluster bus port (port + 10000) after 100 tries');
}

/** The server process ended before it answered PING (its port taken, a bad argument): worth a new port. */
export class RedisExitedError extends Error {}

/**
 * Resolves once the server on `port` answers PING (loading or paused servers do not). `alive`: whether the
 * process is still running; once it is not, this rejects at once instead of waiting out the timeout.
 */
export async function waitForPing(port: number, timeoutMs = 10_000, alive: () => boolean = () => true): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await pingOnce(port)) return;
    if (!alive())
      throw new RedisExitedError(
        `redis on port ${port} exited before it answered PING (its port, or a Cluster node's bus port, may be taken)`,
      );
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`redis on port ${port} did not answer PING within ${timeoutMs} ms`);
}

const live = new Set<RedisProcess>();
process.once('exit', () => {
  for (const p of live) p.child?.kill('SIGKILL');
});

export class RedisProcess {
  child: ChildProcess | undefined;
  readonly host = '127.0.0.1';

  constructor(
    readonly port: number,
    readonly args: readonly string[],
    readonly dir: string,
  ) {}

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** Starts (or restarts) the server on its port and waits until it answers PING. */
  async start(): Promise<void> {
    // Sentinel: args are [config file, '--sentinel']; the config file must come first.
    const sentinel = this.args.includes('--sentinel');
    const base = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir];
    const persist = sentinel ? [] : ['--save', '', '--appendonly', 'no'];
    const args = sentinel ? [...this.args, ...base] : [...base, ...persist, ...this.args];
    const child = spawn(redisServerBinary(), args, { stdio: 'ignore' });
    this.child = child;
    live.add(this);
    await waitForPing(this.port, 10_000, () => child.exitCode === null && child.signalCode === null);
  }

  /** SIGKILL (or another signal), and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      live.delete(this);
      return;
    }
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
    live.delete(this);
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  /** Freezes the process: connections stay open, nothing is answered (a hung server, not a dead one). */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    this.thaw();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Starts a redis-server with these extra args on a free port (a Cluster node's: clusterNodePort), in a fresh
 * dir. Without a port of the caller's, a server that exits at start (another process took the port between
 * the pick and the bind) is started again on a new one, up to 5 times.
 */
/**
 * A fresh directory for a test server's files, in memory (/dev/shm) where the machine has it: a Cluster node
 * writes and fsyncs its nodes.conf as it starts, and on a busy virtual disk that fsync can stall it (the likely
 * cause, not reproduced, of a node that once missed its 10 s PING deadline in CI). Nothing a test server
 * writes needs to outlive it.
 */
export function serverDir(prefix: string): string {
  let base = tmpdir();
  try {
    accessSync('/dev/shm', constants.W_OK);
    base = '/dev/shm';
  } catch {
    // no writable /dev/shm (not Linux, or a container without it): the OS temp dir
  }
  return mkdtempSync(join(base, prefix));
}

export async function spawnRedis(args: string[] = [], port?: number): Promise<RedisProcess> {
  const pick = args.includes('--cluster-enabled') ? clusterNodePort : freePort;
  for (let attempt = 1; ; attempt++) {
    const dir = serverDir('floodgate-redis-');
    const proc = new RedisProcess(port ?? (await pick()), args, dir);
    try {
      await proc.start();
      return proc;
    } catch (err) {
      await proc.stop();
      if (port !== undefined || attempt >= 5 || !(err instanceof RedisExitedError)) throw err;
    }
  }
}
