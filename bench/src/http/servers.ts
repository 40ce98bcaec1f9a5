import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { SERVER_CORE, freePort, pin, unpin } from '../lib/machine';
import type { ShapeName } from './shapes';

/*
 * The benchmark's servers: each framework x variant x shape in a process of its own (server.ts), pinned to
 * SERVER_CORE, with its CPU time read over IPC.
 */
const REGISTER = join(__dirname, '..', '..', '..', 'test', 'ts-register.cjs');

export interface Server {
  port: number;
  child: ChildProcess;
  cpuMicros(): Promise<number>;
  stop(): void;
}

export async function startServer(framework: string, variant: string, shape: ShapeName, redisUrl: string): Promise<Server> {
  const port = await freePort();
  const child = fork(join(__dirname, 'server.ts'), [framework, variant, shape, String(port), redisUrl], {
    execArgv: [
      // swc, file by file (about 0.3 s to start a server, where ts-node took about 2 s): the apps are
      // TypeScript; the packages under test are their built JavaScript either way.
      '-r',
      REGISTER,
      // BENCH_NODE_FLAGS: node's own flags for every server, for an A/B of the runtime (e.g. one of V8's).
      ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== ''),
      ...(process.env.BENCH_PROFILE_DIR
        ? [
            '--cpu-prof',
            `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`,
            `--cpu-prof-name=${`${framework}-${shape}-${variant}`.replace(/[^a-z0-9-]/gi, '_')}.${Date.now()}.cpuprofile`,
          ]
        : []),
    ],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  unpin(child.pid!); // its start-up on both cores; pinned to SERVER_CORE once it listens
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${framework}/${variant} exited with ${code}`)));
  });
  pin(child.pid!, SERVER_CORE);
  return {
    port,
    child,
    cpuMicros: () =>
      new Promise((resolve) => {
        child.once('message', (m: { usage: NodeJS.CpuUsage }) => resolve(m.usage.user + m.usage.system));
        child.send({ type: 'cpu' });
      }),
    stop: () => child.kill('SIGTERM'),
  };
}

/**
 * Several servers started at once (their start-up is mostly loading code, and the machine has two cores);
 * if one fails to start, the others are stopped and the failure is thrown.
 */
export async function startServers(
  specs: readonly { framework: string; variant: string; shape: ShapeName; redisUrl: string }[],
): Promise<Server[]> {
  const started = await Promise.allSettled(specs.map((s) => startServer(s.framework, s.variant, s.shape, s.redisUrl)));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed === undefined) return started.map((s) => (s as PromiseFulfilledResult<Server>).value);
  for (const s of started) if (s.status === 'fulfilled') s.value.stop();
  throw failed.reason;
}
