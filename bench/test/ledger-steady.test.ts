import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startBenchRedis } from '../src/lib/machine';

/*
 * `node bench/scripts/ledger-steady.mjs <build root> [open|closed] [runs]` (bench/results/ab/ledger-lapse.md):
 * a short run of each kind against a redis-server of its own, on this checkout's build.
 */
test.each(['open', 'closed'])(
  'ledger-steady reports the CPU per check and the identifiers noted (%s)',
  async (failure) => {
    const redis = await startBenchRedis();
    try {
      const root = join(__dirname, '..', '..');
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [join(__dirname, '..', 'scripts', 'ledger-steady.mjs'), root, failure, '1'],
        {
          env: { ...process.env, REDIS_URL: redis.url, LEDGER_WARM_MS: '300', LEDGER_MEASURE_MS: '500' },
          timeout: 60_000,
        },
      );
      const m = /\((open|closed)\): µs of CPU per check ([\d.]+) \(runs [\d.]+\), identifiers noted (\d+) of 10000/.exec(stdout);
      expect(m).not.toBeNull();
      expect(m![1]).toBe(failure);
      expect(Number(m![2])).toBeGreaterThan(0);
      // Only 'open' keeps a ledger.
      if (failure === 'closed') expect(Number(m![3])).toBe(0);
    } finally {
      await redis.stop();
    }
  },
  90_000,
);
