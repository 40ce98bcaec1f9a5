import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { testRedisUrl, uniquePrefix } from '@floodgate/testing';

const run = promisify(execFile);
const TS = join(__dirname, '..', '..', '..', '..', 'test', 'ts-register.cjs');
const worker = join(__dirname, '..', 'fixtures', 'promotion-worker.ts');

/*
 * What a server's checks leave to V8's young generation stays there: a check's keys, arguments and promises
 * die young. The open batches of a turn used to sit in a Map cleared at every turn's end, and a cleared
 * Map's old table points to its new one, so once one table had been promoted every later turn's batches
 * were carried into the old generation: slower young collections and a full one every few seconds, which
 * a server's tail latency shows (docs/performance.md, "Latency"). Measured in a process of its own, in
 * bytes the young collections promote per check, not in time, once the process has settled: the first
 * thousands of turns after start promote far more on every Node.js line (code and feedback being made, the
 * young generation growing), and how much varies by line and by how busy the machine is.
 * V8's allocation-site pretenuring is off in that process: a heuristic whose choices differ from one V8 to
 * the next (it may allocate a whole site in the old generation directly), where this measures what young
 * collections carry over.
 */
test("a turn's checks die young: what young collections promote stays small", async () => {
  const { stdout } = await run(process.execPath, ['--no-allocation-site-pretenuring', '-r', TS, worker], {
    env: { ...process.env, REDIS_URL: testRedisUrl(), PREFIX: uniquePrefix('promotion'), WARM_TURNS: '10000', TURNS: '20000' },
  });
  const measured = JSON.parse(stdout.trim().split('\n').pop()!) as { checks: number; youngCollections: number; promotedPerCheck: number };
  expect(measured.checks).toBe(80_000);
  // The measure saw young collections (about 15 to 60, by Node.js line): without any it would prove nothing.
  expect(measured.youngCollections).toBeGreaterThanOrEqual(5);
  // With the Map cleared every turn: 960-1,130 bytes per check on Node.js 20, 22, 24 and 26; without it, 0-160.
  expect(measured.promotedPerCheck).toBeLessThan(400);
}, 60_000);
