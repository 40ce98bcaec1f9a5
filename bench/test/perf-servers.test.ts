import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * `bench/src/perf-servers.ts` (bench/results/ab/express-request-property.md): one short round, two real
 * servers under wrk, each profiled by perf, and the diff of the two reports per request.
 */
test('perf-servers profiles two servers under the same load and diffs their CPU per request by symbol', async () => {
  const root = join(__dirname, '..', '..');
  // A folder that does not exist yet: the tool makes it (it used to wait forever for a perf that could not write there).
  const out = join(mkdtempSync(join(tmpdir(), 'perf-servers-test-')), 'reports');
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
  // Both servers were sampled, each report is its own server's: Floodgate's code runs in the limited one
  // (by function: the servers run with --perf-basic-prof) and never in the bare one. Which of the two
  // spends more a request in one round of a second is left alone: on a busy machine that can turn.
  expect(Number(total![1])).toBeGreaterThan(0);
  expect(Number(total![2])).toBeGreaterThan(0);
  expect(readdirSync(out).sort()).toEqual(['0-0.data', '0-0.txt', '0-1.data', '0-1.txt']);
  const floodgateCode = /JS:\S* \S*packages\/(core|express)\/dist\//;
  expect(readFileSync(join(out, '0-0.txt'), 'utf8')).toMatch(floodgateCode);
  expect(readFileSync(join(out, '0-1.txt'), 'utf8')).not.toMatch(floodgateCode);
}, 150_000);

test('PERF_SERVERS_SHAPE picks the shape, and an unknown one is refused by name before any server starts', async () => {
  const root = join(__dirname, '..', '..');
  const run = promisify(execFile)(
    process.execPath,
    ['-r', join(root, 'test', 'ts-register.cjs'), join(root, 'bench', 'src', 'perf-servers.ts'), 'hono', 'floodgate', '429', '1', '1'],
    { cwd: root, env: { ...process.env, PERF_SERVERS_SHAPE: 'nope' }, timeout: 60_000 },
  );
  await expect(run).rejects.toMatchObject({ stderr: expect.stringContaining('PERF_SERVERS_SHAPE: no shape nope') });
}, 90_000);

test('a perf that cannot record stops the run with what it said, instead of a wait for an exit already gone', async () => {
  const root = join(__dirname, '..', '..');
  // A `perf` first on the PATH that refuses at once, as a perf without permission to profile does.
  const bin = mkdtempSync(join(tmpdir(), 'perf-servers-bin-'));
  writeFileSync(join(bin, 'perf'), '#!/bin/sh\necho "perf: not allowed to record here" >&2\nexit 3\n', { mode: 0o755 });
  const run = promisify(execFile)(
    process.execPath,
    ['-r', join(root, 'test', 'ts-register.cjs'), join(root, 'bench', 'src', 'perf-servers.ts'), 'hono', 'floodgate', 'baseline', '1', '1'],
    { cwd: root, env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` }, timeout: 90_000 },
  );
  await expect(run).rejects.toMatchObject({
    killed: false,
    stderr: expect.stringContaining('perf record exited with 3 while it should have been recording: perf: not allowed to record here'),
  });
}, 120_000);
