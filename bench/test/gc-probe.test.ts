import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startBenchRedis } from '../src/lib/machine';

/*
 * `node bench/scripts/gc-probe.cjs <framework> <variant> [redis url]` (docs/performance.md): a bench server
 * under wrk with V8's young collections traced, per request. A short run of Floodgate on Hono: the script
 * starts the bench's own server (bench/src/http/server.ts), so a change to how that server is started
 * shows here.
 */
test('gc-probe loads a bench server and reports what each request left to the young collector', async () => {
  const redis = await startBenchRedis();
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(__dirname, '..', 'scripts', 'gc-probe.cjs'), 'hono', 'floodgate', redis.url],
      {
        env: { ...process.env, GC_PROBE_SECONDS: '2' },
        timeout: 60_000,
      },
    );
    const m =
      /^hono\/floodgate: (\d+) requests in 2 s, per request: allocated (\d+) B, survived a scavenge (\d+) B, promoted (\d+) B; (\d+) scavenges/m.exec(
        stdout,
      );
    expect(m).not.toBeNull();
    const [requests, allocated, , , scavenges] = m!.slice(1).map(Number) as [number, number, number, number, number];
    expect(requests).toBeGreaterThan(0);
    expect(allocated).toBeGreaterThan(0);
    expect(scavenges).toBeGreaterThan(0);
  } finally {
    await redis.stop();
  }
}, 90_000);
