import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { cBinary } from './c-binary';
import { LOAD_CORE } from './machine';

/*
 * A Redis that answers slowly: slow-proxy.c, a TCP proxy on loopback that holds every chunk of Redis's
 * replies for `delayMs` before passing it on (requests go through at once), each chunk from when it arrived
 * and never sooner, in order. Run on LOAD_CORE beside Redis and the load generator. The latency phase points a
 * server's Redis client at it to show what a slow store adds and what the deadline (`timeoutMs`) caps.
 */
export interface SlowProxy {
  url: string;
  /** The proxy's process (it ends with the process that started it). */
  pid: number;
  close(): Promise<void>;
}

const SOURCE = join(__dirname, 'slow-proxy.c');

export function startSlowProxy(redisPort: number, delayMs: number): Promise<SlowProxy> {
  const child = spawn('taskset', ['-c', String(LOAD_CORE), cBinary(SOURCE), String(redisPort), String(Math.round(delayMs * 1000))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let out = '';
    const failed = (why: string): void => reject(new Error(`slow-proxy did not start: ${why}`));
    child.once('error', (err) => failed(err.message));
    child.once('exit', (code) => failed(`exited with ${code}`));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const port = /port (\d+)/.exec(out)?.[1];
      if (port === undefined) return;
      child.stdout!.removeAllListeners('data');
      resolve({
        url: `redis://127.0.0.1:${port}`,
        pid: child.pid!,
        close: () => {
          child.kill('SIGTERM');
          return exited;
        },
      });
    });
  });
}
