import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startBenchRedis } from '../src/lib/machine';

/*
 * `node bench/scripts/lone-check.mjs <build root>` (bench/results/ab/deadline-idle.md): a short run against a
 * redis-server of its own, on this checkout's build.
 */
test('lone-check reports the CPU and wall time of a check that runs alone', async () => {
  const redis = await startBenchRedis();
  try {
    const root = join(__dirname, '..', '..');
    const { stdout } = await promisify(execFile)(process.execPath, [join(__dirname, '..', 'scripts', 'lone-check.mjs'), root], {
      env: { ...process.env, REDIS_URL: redis.url, LONE_WARM_MS: '200', LONE_MEASURE_MS: '300' },
      timeout: 60_000,
    });
    const m = /: µs per lone check: CPU ([\d.]+), wall ([\d.]+) \((\d+) checks\)/.exec(stdout);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(Number(m![2])).toBeGreaterThan(0);
    expect(Number(m![3])).toBeGreaterThan(0);
  } finally {
    await redis.stop();
  }
}, 90_000);
