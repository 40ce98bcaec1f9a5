import type { ChildProcess } from 'node:child_process';
import { startProcesses, startServers, type Server, type ServerSpec } from './servers';

/*
 * Where a phase of `npm run bench` gets its servers. A full run starts a process per app for each shape (and
 * for the latency phase) and stops it after: fresh processes, each warmed up once, as its published figures
 * were measured. The smoke run starts one process per framework x variant before the framework's phases,
 * holding every app they will use (each shape's, and the latency phase's on the slow Redis, each on its own
 * port): a process warms up fully the first time one of its apps is used, and briefly for each later app,
 * whose code is mostly the same JIT-compiled framework and limiter. A cold process takes about 2 s to reach
 * its rate (warm-up.ts), so a warm-up per app was most of a smoke run. Next.js's apps share the process's
 * one Next app too, each request marked with its app (apps-next.ts).
 */
export interface ServerSet {
  servers: Server[];
  /** Seconds of load each server takes before it is measured. */
  warmup: number[];
  /** Done with the servers: stops the processes taken for this phase alone. */
  release(): void;
}

export interface ServerPool {
  /** The servers of `specs` (in their order), and the warm-up each needs for `warmupSeconds` on a cold process. */
  take(specs: readonly ServerSpec[], warmupSeconds: number): Promise<ServerSet>;
  /** Stops every process the pool holds. */
  close(): void;
}

/** A full run's: the servers started for each take, and stopped at its release. */
export const ownServers: ServerPool = {
  async take(specs, warmupSeconds) {
    const servers = await startServers(specs);
    return { servers, warmup: servers.map(() => warmupSeconds), release: () => servers.forEach((s) => s.stop()) };
  },
  close() {},
};

const appKey = (s: ServerSpec): string => `${s.framework}|${s.variant}|${s.shape}|${s.redisUrl}`;

/**
 * The smoke run's: every app of `plan` started now, one process per framework x variant; a take's warm-up
 * is `warmupSeconds` for a process's first app, `rewarmSeconds` for its others, and none for an app taken
 * before.
 */
export async function sharedServers(plan: readonly ServerSpec[], rewarmSeconds: number): Promise<ServerPool> {
  const processes = new Map<string, ServerSpec[]>();
  const planned = new Set<string>();
  for (const spec of plan) {
    if (planned.has(appKey(spec))) continue;
    planned.add(appKey(spec));
    const group = `${spec.framework}|${spec.variant}`;
    processes.set(group, [...(processes.get(group) ?? []), spec]);
  }
  const groups = [...processes.values()];
  const started = await startProcesses(groups);
  const byApp = new Map<string, Server>();
  groups.forEach((apps, i) => apps.forEach((app, j) => byApp.set(appKey(app), started[i]![j]!)));
  const warmed = new Set<ChildProcess>();
  const warmedApps = new Set<string>();
  return {
    async take(specs, warmupSeconds) {
      const servers = specs.map((spec) => {
        const server = byApp.get(appKey(spec));
        if (server === undefined) throw new Error(`bench: no server was planned for ${appKey(spec)}`);
        return server;
      });
      // An app already warmed up (the latency phase's baseline and loopback apps are the equal shape's) needs none.
      const warmup = specs.map((spec, i) => {
        const child = servers[i]!.child;
        const seconds = warmedApps.has(appKey(spec)) ? 0 : warmed.has(child) ? Math.min(rewarmSeconds, warmupSeconds) : warmupSeconds;
        warmed.add(child);
        warmedApps.add(appKey(spec));
        return seconds;
      });
      return { servers, warmup, release: () => undefined };
    },
    close: () => started.forEach((apps) => apps[0]!.stop()),
  };
}
