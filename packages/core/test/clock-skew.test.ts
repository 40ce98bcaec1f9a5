import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, testRedisUrl, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

const run = promisify(execFile);
const worker = join(__dirname, 'fixtures', 'skewed-worker.ts');
const TS = join(__dirname, '..', '..', '..', 'test', 'ts-register.cjs');

afterAll(closeClients);

/** Runs checks in a child process whose Date.now() is off by `skewMs`. */
async function checksIn(skewMs: number, prefix: string, count: number): Promise<number> {
  const { stdout } = await run(process.execPath, ['-r', TS, worker], {
    env: {
      ...process.env,
      SKEW_MS: String(skewMs),
      PREFIX: prefix,
      COUNT: String(count),
      REDIS_URL: testRedisUrl(),
    },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!).allowed;
}

test('two processes whose clocks differ by an hour admit exactly the limit together', async () => {
  const prefix = uniquePrefix('skew');
  // Each process alone would have its own window if it used its own clock; Redis TIME gives them one.
  const [early, late] = await Promise.all([checksIn(0, prefix, 40), checksIn(3_600_000, prefix, 40)]);
  expect(early + late).toBe(25);
  // Cross-check from this process: the shared counter is spent. The client is connected first: on a loaded
  // machine a new client can take longer than a limiter's first check waits for it (then the failure policy
  // answers, which is not what this reads).
  const redis = connect();
  await redis.ping();
  const limiter = createLimiter({
    ...TEST_DEADLINE,
    redis,
    prefix,
    name: 'skew',
    algorithm: 'fixed-window',
    limits: { limit: 25, window: '1h' },
  });
  expect((await limiter.peek('ip:192.0.2.1')).remaining).toBe(0);
  await limiter.close();
}, 60_000);
