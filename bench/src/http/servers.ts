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

/** server.ts's exit code when a port it was given was taken before it listened (EADDRINUSE). */
export const LISTEN_FAILED = 98;
/** How many sets of ports startProcess tries. */
const LISTEN_ATTEMPTS = 5;

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
  const shapes = [...new Set(apps.map((a) => a.shape))].join('+');
  // A port is picked free and then handed to the process, which listens on it a moment later: under a
  // parallel test run another process can take it in between. The server then exits with LISTEN_FAILED, and
  // starts again on other ports.
  for (let attempt = 1; ; attempt++) {
    const specs: AppSpec[] = [];
    for (const app of apps) specs.push({ shape: app.shape, url: app.redisUrl, port: await freePort() });
    const started = await forkServer(framework, variant, shapes, specs);
    if (started !== LISTEN_FAILED) return started;
    if (attempt === LISTEN_ATTEMPTS)
      throw new Error(`${framework}/${variant}: every port picked was taken before it listened (${attempt} attempts)`);
  }
}

/** The process of startProcess on `specs`' ports: its apps, or LISTEN_FAILED when a port was taken. */
async function forkServer(framework: string, variant: string, shapes: string, specs: AppSpec[]): Promise<Server[] | typeof LISTEN_FAILED> {
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
  const ready = await new Promise<boolean>((resolve, reject) => {
    child.once('message', () => resolve(true));
    child.once('exit', (code) =>
      code === LISTEN_FAILED ? resolve(false) : reject(new Error(`${framework}/${variant} exited with ${code}`)),
    );
  });
  if (!ready) return LISTEN_FAILED;
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
