#!/usr/bin/env node
// Is a test flaky? Runs one test file N times (default 10) with both cores busy, as a loaded CI machine is:
//   npm run test:flaky -- packages/core/test/failure.test.ts 20
//   npm run test:flaky -- packages/core/test/failure.test.ts 20 -t 'fails fast'   (jest's own options after N)
// Two busy processes by default (a 2-core CI machine, both cores taken); BUSY=0 runs it on idle cores, BUSY=4
// beside four. Each busy process is `node -e 'for(;;);'`,
// stopped by its PID when the runs end (or on Ctrl-C). A failing run's output is kept in a file under the OS
// temp directory, named at the end. Exits 1 when any run failed.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

const [file, count, ...jestArgs] = process.argv.slice(2);
const runs = count === undefined ? 10 : Number(count);
if (file === undefined || !Number.isInteger(runs) || runs < 1) {
  console.error('usage: npm run test:flaky -- <test file> [runs, default 10] [jest options...]');
  process.exit(2);
}
const busyCount = process.env.BUSY === undefined ? 2 : Number(process.env.BUSY);
if (!Number.isInteger(busyCount) || busyCount < 0) {
  console.error(`BUSY is ${JSON.stringify(process.env.BUSY)}: a number of busy processes (0 for none)`);
  process.exit(2);
}

const busy = Array.from({ length: busyCount }, () => spawn(process.execPath, ['-e', 'for(;;);'], { stdio: 'ignore' }));
const stopBusy = () => {
  for (const child of busy) if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL');
};
process.on('exit', stopBusy);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

/** One jest run of the file: its exit code, wall time and output. */
function runOnce() {
  return new Promise((done) => {
    const started = performance.now();
    const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
    // npm run starts scripts at the repository root: the file is named from where the command was typed.
    const path = resolve(process.env.INIT_CWD ?? process.cwd(), file);
    const child = spawn(process.execPath, [jest, path, ...jestArgs], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code) => done({ code, seconds: (performance.now() - started) / 1000, output }));
  });
}

console.log(
  `${file}: ${runs} runs beside ${busyCount} busy process${busyCount === 1 ? '' : 'es'} (pids ${busy.map((c) => c.pid).join(', ') || 'none'})`,
);
const failures = [];
let dir;
for (let i = 1; i <= runs; i++) {
  const { code, seconds, output } = await runOnce();
  let note = '';
  if (code !== 0) {
    dir ??= mkdtempSync(join(tmpdir(), 'floodgate-flaky-'));
    const log = join(dir, `run-${i}.log`);
    writeFileSync(log, output);
    const failed = output.split('\n').filter((line) => line.trimStart().startsWith('●'));
    failures.push({ run: i, log, failed });
    note = `  FAILED (exit ${code}): ${log}${failed.length ? `\n    ${failed.map((l) => l.trim()).join('\n    ')}` : ''}`;
  }
  console.log(`run ${i}/${runs}: ${code === 0 ? 'passed' : 'failed'} in ${seconds.toFixed(1)} s${note}`);
}
stopBusy();
console.log(`${runs - failures.length} passed, ${failures.length} failed`);
process.exit(failures.length === 0 ? 0 : 1);
