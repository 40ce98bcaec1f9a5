import Redis from 'ioredis';
import { factoryOf } from './frameworks';
import { SHAPE, type ShapeName } from './shapes';
import { LISTEN_FAILED } from './servers';

/*
 * One benchmark server process, forked by servers.ts and pinned to the server core: argv framework, variant,
 * then its apps as JSON, [{ shape, port, url }]: one app of the variant per shape and Redis, each on its own
 * port (a full run gives a process one app; the smoke run gives a variant's process every app its phases
 * use, so one warm-up serves them all). It answers IPC { type: 'cpu' } with its process.cpuUsage(), so CPU
 * per request is the server's own, measured without a route that the limiter would also see.
 */
export interface AppSpec {
  shape: ShapeName;
  port: number;
  url: string;
}

async function main(): Promise<void> {
  const [framework, variant, json] = process.argv.slice(2) as [string, string, string];
  const factory = factoryOf(framework, variant);
  if (factory === undefined) throw new Error(`unknown variant ${framework}/${variant}`);
  const clients = new Map<string, Redis>();
  for (const app of JSON.parse(json) as AppSpec[]) {
    let redis = clients.get(app.url);
    if (redis === undefined) {
      // `floodgate+autopipeline`: ioredis batches every command of a tick into one pipeline (the client's option).
      redis = new Redis(app.url, { lazyConnect: false, enableAutoPipelining: variant.includes('+autopipeline') });
      clients.set(app.url, redis);
    }
    const listen = await factory(SHAPE[app.shape], redis, variant);
    await listen(app.port);
  }
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'cpu') process.send!({ type: 'cpu', usage: process.cpuUsage() });
  });
  process.on('disconnect', () => process.exit(0));
  // A normal exit, so `node --cpu-prof` (BENCH_PROFILE_DIR) writes its profile.
  process.on('SIGTERM', () => process.exit(0));
  process.send!({ type: 'ready' });
}

main().catch((err: unknown) => {
  // A port taken since the parent picked it: the parent picks others (servers.ts).
  if ((err as { code?: unknown } | undefined)?.code === 'EADDRINUSE') process.exit(LISTEN_FAILED);
  process.stderr.write(`server: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
