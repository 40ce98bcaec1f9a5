import Redis from 'ioredis';
import { factoryOf } from './frameworks';
import { SHAPE, type ShapeName } from './shapes';

/*
 * One benchmark server, forked by run.ts and pinned to the server core: argv framework, variant, shape,
 * port, Redis URL. It answers IPC { type: 'cpu' } with its process.cpuUsage(), so CPU per request is the
 * server's own, measured without a route that the limiter would also see.
 */

async function main(): Promise<void> {
  const [framework, variant, shape, port, url] = process.argv.slice(2) as [string, string, ShapeName, string, string];
  const factory = factoryOf(framework, variant);
  if (factory === undefined) throw new Error(`unknown variant ${framework}/${variant}`);
  // `floodgate+autopipeline`: ioredis batches every command of a tick into one pipeline (the client's option).
  const redis = new Redis(url, { lazyConnect: false, enableAutoPipelining: variant.includes('+autopipeline') });
  const listen = await factory(SHAPE[shape], redis, variant);
  await listen(Number(port));
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'cpu') process.send!({ type: 'cpu', usage: process.cpuUsage() });
  });
  process.on('disconnect', () => process.exit(0));
  // A normal exit, so `node --cpu-prof` (BENCH_PROFILE_DIR) writes its profile.
  process.on('SIGTERM', () => process.exit(0));
  process.send!({ type: 'ready' });
}

main().catch((err: unknown) => {
  process.stderr.write(`server: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
