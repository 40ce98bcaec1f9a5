import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { SERVER_CORE, freePort, pin, unpin } from '../lib/machine';
import type { AppSpec } from './server';
import type { ShapeName } from './shapes';

/*
 * The benchmark's servers: processes (server.ts) pinned to SERVER_CORE, each holding one variant's apps, with
 * their CPU time read over IPC. A Server is one app: its port, and its process (shared with the process's
 * other apps).
 */
const REGISTER = join(__dirname, '..', '..', '..', 'test', 'ts-register.cjs');

export interface Server {
  port: number;
  child: ChildProcess;
  /** The process's CPU time so far, in µs (every app of it: only one is ever under load). */
  cpuMicros(): Promise<number>;
  /** Stops the process, and with it every app it holds. */
  stop(): void;
}

/** One app to serve: a variant of a framework, built for a shape, on a Redis. */
export interface ServerSpec {
  framework: string;
  variant: string;
  shape: ShapeName;
  redisUrl: string;
}

/** One process with an app per `apps` entry (the same variant of the same framework), in their order. */
export async function startProcess(
  framework: string,
  variant: string,
  apps: readonly { shape: ShapeName; redisUrl: string }[],
): Promise<Server[]> {
  const specs: AppSpec[] = [];
  for (const app of apps) specs.push({ shape: app.shape, url: app.redisUrl, port: await freePort() });
  const shapes = [...new Set(apps.map((a) => a.shape))].join('+');
  const child = fork(join(__dirname, 'server.ts'), [framework, variant, JSON.stringify(specs)], {
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
            `--cpu-prof-name=${`${framework}-${shapes}-${variant}`.replace(/[^a-z0-9+-]/gi, '_')}.${Date.now()}.cpuprofile`,
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
  const cpuMicros = (): Promise<number> =>
    new Promise((resolve) => {
      child.once('message', (m: { usage: NodeJS.CpuUsage }) => resolve(m.usage.user + m.usage.system));
      child.send({ type: 'cpu' });
    });
  const stop = (): void => void child.kill('SIGTERM');
  return specs.map((s) => ({ port: s.port, child, cpuMicros, stop }));
}

/** One process of one app. */
export async function startServer(framework: string, variant: string, shape: ShapeName, redisUrl: string): Promise<Server> {
  return (await startProcess(framework, variant, [{ shape, redisUrl }]))[0]!;
}

/**
 * Several processes started at once (their start-up is mostly loading code, and the machine has two cores),
 * each given as its apps; if one fails to start, the others are stopped and the failure is thrown.
 */
export async function startProcesses(processes: readonly (readonly ServerSpec[])[]): Promise<Server[][]> {
  const started = await Promise.allSettled(processes.map((apps) => startProcess(apps[0]!.framework, apps[0]!.variant, apps)));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed === undefined) return started.map((s) => (s as PromiseFulfilledResult<Server[]>).value);
  for (const s of started) if (s.status === 'fulfilled') s.value[0]!.stop();
  throw failed.reason;
}

/** A process per app, started at once (startProcesses). */
export async function startServers(specs: readonly ServerSpec[]): Promise<Server[]> {
  return (await startProcesses(specs.map((s) => [s]))).map((apps) => apps[0]!);
}
