// `npm start` / `npm run demo`, for any of the three examples:
//   npm start -- --framework koa      npm run demo -- --framework fastify      FRAMEWORK=koa npm run demo
// Builds the chosen example and what it depends on, and the CLI (turbo), then runs its dist/server.js or dist/demo.js.
// Each step runs as a child process; SIGINT and SIGTERM (Ctrl-C, `docker stop`, a process manager) are passed
// on to it, so the example closes its HTTP server and stops its embedded redis-server, and this process exits
// with the example's exit code.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FRAMEWORKS = ['express', 'fastify', 'koa'];
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [command, ...args] = process.argv.slice(2);
const flag = args.indexOf('--framework');
const framework =
  (flag >= 0 ? args[flag + 1] : args.find((a) => a.startsWith('--framework='))?.slice(12)) ?? process.env.FRAMEWORK ?? 'express';

if (!['start', 'demo'].includes(command) || !FRAMEWORKS.includes(framework)) {
  console.error(`usage: node scripts/example.mjs <start|demo> [--framework ${FRAMEWORKS.join('|')}]  (got ${command} ${framework})`);
  process.exit(2);
}

let child;
let signalled;
const forward = (signal) => {
  signalled ??= signal;
  if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
};
process.on('SIGINT', forward).on('SIGTERM', forward);

/** Runs one step; resolves with how it ended. */
function run(cmd, argv) {
  return new Promise((resolve) => {
    child = spawn(cmd, argv, { cwd: root, stdio: 'inherit' });
    child.once('error', (err) => {
      console.error(`${cmd}: ${err.message}`);
      resolve({ code: 1, signal: null });
    });
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/** Exits as the step did: with its code, or (killed by a signal) by the same signal. */
function exitAs({ code, signal }) {
  if (signal) {
    process.removeAllListeners('SIGINT').removeAllListeners('SIGTERM');
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
}

// The repository's own turbo (no npx: one process less between a signal and the build).
const turbo = join(root, 'node_modules', 'turbo', 'bin', 'turbo');
const build = existsSync(turbo) ? [process.execPath, [turbo]] : ['npx', ['turbo']];
const built = await run(build[0], [
  ...build[1],
  'run',
  'build',
  `--filter=@floodgate/example-${framework}...`,
  // The CLI too: `npx floodgate ...` against the running example (README, docs/cli.md).
  '--filter=@floodgate/cli...',
  '--output-logs=errors-only',
]);
// Stopped during the build: the example is not started.
if (built.code !== 0 || signalled) exitAs(built.code === 0 ? { code: 128 + constants.signals[signalled], signal: null } : built);
else exitAs(await run(process.execPath, [join('examples', framework, 'dist', command === 'start' ? 'server.js' : 'demo.js')]));
