import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * `bench/src/perf-servers.ts` (bench/results/ab/express-request-property.md): one short round, two real
 * servers under wrk, each profiled by perf, and the diff of the two reports per request.
 */
test('perf-servers profiles two servers under the same load and diffs their CPU per request by symbol', async () => {
  const root = join(__dirname, '..', '..');
  const out = mkdtempSync(join(tmpdir(), 'perf-servers-test-'));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '-r',
      join(root, 'test', 'ts-register.cjs'),
      join(root, 'bench', 'src', 'perf-servers.ts'),
      'express',
      'floodgate',
      'baseline',
      '1',
      '1',
    ],
    { cwd: root, env: { ...process.env, PERF_SERVERS_OUT: out, PERF_SERVERS_ROWS: '5' }, timeout: 120_000 },
  );
  expect(stdout).toMatch(/^round 1: floodgate \d+ requests\/s$/m);
  expect(stdout).toMatch(/^round 1: baseline \d+ requests\/s$/m);
  const total = /^total: ([\d.]+) against ([\d.]+) µs per unit/m.exec(stdout);
  expect(total).not.toBeNull();
  // Both servers were sampled, and the limited one does more per request than the bare one.
  expect(Number(total![2])).toBeGreaterThan(0);
  expect(Number(total![1])).toBeGreaterThan(Number(total![2]));
  expect(readdirSync(out).sort()).toEqual(['0-0.data', '0-0.txt', '0-1.data', '0-1.txt']);
}, 150_000);
