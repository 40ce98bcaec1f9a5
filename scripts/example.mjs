// `npm start` / `npm run demo`, for any of the three examples:
//   npm start -- --framework koa      npm run demo -- --framework fastify      FRAMEWORK=koa npm run demo
// Builds the chosen example and what it depends on (turbo), then runs its dist/server.js or dist/demo.js.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FRAMEWORKS = ['express', 'fastify', 'koa'];
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [command, ...args] = process.argv.slice(2);
const flag = args.indexOf('--framework');
const framework = (flag >= 0 ? args[flag + 1] : args.find((a) => a.startsWith('--framework='))?.slice(12)) ?? process.env.FRAMEWORK ?? 'express';

if (!['start', 'demo'].includes(command) || !FRAMEWORKS.includes(framework)) {
  console.error(`usage: node scripts/example.mjs <start|demo> [--framework ${FRAMEWORKS.join('|')}]  (got ${command} ${framework})`);
  process.exit(2);
}
const run = (cmd, argv) => spawnSync(cmd, argv, { cwd: root, stdio: 'inherit' }).status ?? 1;
const built = run('npx', ['turbo', 'run', 'build', `--filter=@floodgate/example-${framework}...`, '--output-logs=errors-only']);
if (built !== 0) process.exit(built);
process.exit(run(process.execPath, [join('examples', framework, 'dist', command === 'start' ? 'server.js' : 'demo.js')]));
