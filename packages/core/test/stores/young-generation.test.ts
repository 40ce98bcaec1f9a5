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
 * were carried into the old generation (about 1.2 KB per check): slower young collections and a full one
 * every few seconds, which a server's tail latency shows (docs/performance.md, "Latency"). Measured in a
 * process of its own, in bytes of old generation per check, not in time.
 */
test("a turn's checks die young: what they move into the old generation stays small, and needs no full collection", async () => {
  const { stdout } = await run(process.execPath, ['--expose-gc', '-r', TS, worker], {
    env: { ...process.env, REDIS_URL: testRedisUrl(), PREFIX: uniquePrefix('promotion'), TURNS: '4000' },
  });
  const measured = JSON.parse(stdout.trim().split('\n').pop()!) as { checks: number; promotedPerCheck: number; fullCollections: number };
  expect(measured.checks).toBe(16_000);
  // Before the fix: 1,320-1,350 bytes per check (or a full collection, which took them back); after it,
  // 230-360 (the client's commands and the store's small tables that outlive a young collection).
  expect(measured).toEqual(expect.objectContaining({ fullCollections: 0 }));
  expect(measured.promotedPerCheck).toBeLessThan(700);
}, 60_000);
