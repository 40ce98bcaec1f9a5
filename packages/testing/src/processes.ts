import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisServerBinary } from './redis-server';

/*
 * redis-server processes that a test can kill, freeze and restart on the same port. redis-memory-server
 * hides its process and picks a new port on restart, so fault, Sentinel and Cluster tests use these.
 */

/** A free loopback port: bind to 0, read the port, release it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
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
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => finish(d.toString().startsWith('+PONG')));
  });
}

/** Resolves once the server on `port` answers PING (loading or paused servers do not). */
export async function waitForPing(port: number, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await pingOnce(port)) return;
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
    this.child = spawn(redisServerBinary(), args, { stdio: 'ignore' });
    live.add(this);
    await waitForPing(this.port);
  }

  /** SIGKILL (or another signal), and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
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

/** Starts a redis-server with these extra args on a free port, in a fresh dir. */
export async function spawnRedis(args: string[] = [], port?: number): Promise<RedisProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-redis-'));
  const proc = new RedisProcess(port ?? (await freePort()), args, dir);
  await proc.start();
  return proc;
}
