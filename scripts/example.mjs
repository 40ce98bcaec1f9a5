// `npm start` / `npm run demo`, for any of the examples:
//   npm start -- --framework koa      npm run demo -- --framework fastify      FRAMEWORK=koa npm run demo
// Builds the chosen example and what it depends on, the CLI and the repository's example tooling (turbo),
// then runs the example's own dist/server.js, which needs only a Redis (REDIS_URL) and a PORT: with REDIS_URL
// unset, this starts an embedded redis-server from PATH for it (examples/embedded-redis, through
// redis-memory-server) and stops it once the example has exited; with none on PATH, the example runs on its
// in-memory store (STORE=memory). `start` runs the example until SIGINT or SIGTERM (Ctrl-C, `docker stop`, a
// process manager), which are passed on to it; `demo` starts it on a free port and a fresh key prefix, fires
// the scripted burst at it over HTTP and stops it. This process exits with the example's exit code.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FRAMEWORKS = {
  express: 'Express',
  fastify: 'Fastify',
  koa: 'Koa',
  hono: 'Hono',
  nestjs: 'NestJS',
  graphql: 'GraphQL Yoga',
  next: 'Next.js',
  trpc: 'tRPC',
  mcp: 'MCP',
};
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [command, ...args] = process.argv.slice(2);
const flag = args.indexOf('--framework');
const framework =
  (flag >= 0 ? args[flag + 1] : args.find((a) => a.startsWith('--framework='))?.slice(12)) ?? process.env.FRAMEWORK ?? 'express';

if (!['start', 'demo'].includes(command) || !Object.hasOwn(FRAMEWORKS, framework)) {
  console.error(
    `usage: node scripts/example.mjs <start|demo> [--framework ${Object.keys(FRAMEWORKS).join('|')}]  (got ${command} ${framework})`,
  );
  process.exit(2);
}
// The demo's scripted burst is of the REST examples' routes.
if (command === 'demo' && framework === 'graphql') {
  console.error("npm run demo drives the REST examples; examples/graphql/README.md has the GraphQL example's requests");
  process.exit(2);
}
// The demo speaks the REST API of the other examples; the tRPC example's procedures are tried with its own lines below.
if (command === 'demo' && framework === 'trpc') {
  console.error(
    'npm run demo drives the REST examples; start the tRPC one with `npm start -- --framework trpc` and try the lines it prints',
  );
  process.exit(2);
}
// The demo drives the example API over HTTP; the MCP example speaks MCP (its README says how to try it).
if (command === 'demo' && framework === 'mcp') {
  console.error(
    'npm run demo drives the example API; the MCP example has no demo: `npm start -- --framework mcp` and examples/mcp/README.md',
  );
  process.exit(2);
}

let child;
let signalled;
const forward = (signal) => {
  signalled ??= signal;
  if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
};
process.on('SIGINT', forward).on('SIGTERM', forward);

/** Starts one step as the current child. */
function launch(cmd, argv, options = {}) {
  child = spawn(cmd, argv, { cwd: root, stdio: 'inherit', ...options });
  const step = child;
  return new Promise((resolve) => {
    step.once('error', (err) => {
      console.error(`${cmd}: ${err.message}`);
      resolve({ code: 1, signal: null });
    });
    step.once('exit', (code, signal) => resolve({ code, signal }));
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
const stoppedBySignal = () => ({ code: 128 + constants.signals[signalled], signal: null });

// The repository's own turbo (no npx: one process less between a signal and the build).
const turbo = join(root, 'node_modules', 'turbo', 'bin', 'turbo');
const build = existsSync(turbo) ? [process.execPath, [turbo]] : ['npx', ['turbo']];
const built = await launch(build[0], [
  ...build[1],
  'run',
  'build',
  `--filter=@floodgate/example-${framework}...`,
  // The embedded redis-server and the demo driver.
  '--filter=@floodgate/embedded-redis',
  // The CLI too: `npx floodgate ...` against the running example (README, docs/cli.md).
  '--filter=@floodgate/cli...',
  '--output-logs=errors-only',
]);
// Stopped during the build: the example is not started.
if (built.code !== 0 || signalled) exitAs(built.code === 0 ? stoppedBySignal() : built);
const tools = createRequire(import.meta.url)(join(root, 'examples', 'embedded-redis', 'dist', 'index.js'));

/** What the example counts in: REDIS_URL as given, else an embedded redis-server, else its in-memory store. */
async function openStore() {
  const url = process.env.REDIS_URL;
  if (url) return { env: {}, label: `Redis at ${url}`, stop: async () => {} };
  try {
    const embedded = await tools.startRedis();
    if (command === 'start') console.log(`embedded redis-server at ${embedded.url} (REDIS_URL is unset; it stops with the example)`);
    return { env: { REDIS_URL: embedded.url }, label: `embedded redis-server at ${embedded.url}`, stop: () => embedded.stop() };
  } catch (err) {
    console.log('');
    console.log('  *****************************************************************************');
    console.log('  *  No redis-server on PATH and no REDIS_URL: running on the IN-MEMORY store.  *');
    console.log('  *  Limits hold for this process only. Install Redis or set REDIS_URL.         *');
    console.log('  *****************************************************************************');
    console.log(`  (${err instanceof Error ? err.message.split('(')[0].trim() : String(err)})`);
    return { env: { STORE: 'memory' }, label: 'in-memory store', stop: async () => {} };
  }
}

const store = await openStore();
if (signalled) {
  await store.stop();
  exitAs(stoppedBySignal());
}

// The example, its stdout read here: its first line says where it listens (with PORT=0, the port it got).
const demo = command === 'demo';
const env = { ...process.env, ...store.env, ...(demo ? { PORT: '0', PREFIX: `floodgate-demo-${process.pid}` } : {}) };
const exited = launch(process.execPath, [join('examples', framework, 'dist', 'server.js')], { env, stdio: ['inherit', 'pipe', 'inherit'] });
const example = child;
const listening = new Promise((resolve) => {
  let out = '';
  example.stdout.on('data', (chunk) => {
    if (!demo) process.stdout.write(chunk);
    out += chunk;
    const url = /example on (http:\/\/\S+)/.exec(out)?.[1];
    if (url) resolve(url);
  });
  exited.then(() => resolve(undefined));
});

/**
 * The command line (docs/cli.md) against this example: its Redis and its key prefix, which are not the
 * CLI's defaults (an embedded redis-server on a port of its own, the prefix `floodgate-example`).
 */
function cliHint(storeEnv, prefix) {
  if (storeEnv.STORE === 'memory') return 'The command line (npx floodgate) needs a Redis: this example counts in its own memory.';
  // The embedded server's URL; a REDIS_URL of the user's own (a password, maybe) is the CLI's default already.
  const target = `${storeEnv.REDIS_URL ? `--url ${storeEnv.REDIS_URL} ` : ''}--prefix ${prefix || 'floodgate-example'}`;
  return [
    'The command line (docs/cli.md) reaches this example with these options (its limiters register at their first request):',
    `  npx floodgate limiters ${target}`,
    `  npx floodgate override set key:team-7 --plan pro --ttl 30d ${target}`,
    `  npx floodgate inspect key:team-7 ${target}`,
  ].join('\n');
}

const url = await listening;
if (url && !demo && framework === 'graphql') {
  const q = (query) => `curl -s -i -H 'content-type: application/json' -d '${JSON.stringify({ query })}' ${url}/graphql`;
  console.log('Try:');
  console.log(
    `  ${q('{ a: search(term: "a") { id } b: search(term: "b") { id } c: search(term: "c") { id } d: search(term: "d") { id } }')}   # 429: 4 searches, 3 a minute`,
  );
  console.log(`  ${q('{ posts(first: 100) { title author { name } } }')}   # cost 300 of 2,000 a minute`);
} else if (url && !demo && framework === 'trpc') {
  console.log('Try (each procedure is a URL; a comma-separated path is one batch, each call counted):');
  console.log(`  curl -i ${url}/hello                              # 20 per 10 s per client`);
  console.log(`  curl -s "${url}/search,search,search,search?batch=1&input=%7B%7D"   # one batch: 3 results, then TOO_MANY_REQUESTS`);
  console.log(`  curl -i -X POST -H 'content-type: application/json' -d '{"username":"ada"}' ${url}/login   # 5 per 15 min per account`);
} else if (url && !demo && framework === 'mcp') {
  console.log(
    'Try: npx @modelcontextprotocol/inspector  (transport Streamable HTTP, URL ' + url + '/mcp, header Authorization: Bearer demo-key)',
  );
  console.log(
    `  curl -s -X POST ${url}/mcp -H 'authorization: Bearer demo-key' -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\`,
  );
  console.log(
    `    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'`,
  );
} else if (url && !demo) {
  console.log('Try:');
  console.log(`  curl -i ${url}/                                   # 20 per 10 s per client`);
  console.log(`  for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\\n' "${url}/search?q=x"; done   # 4th is 429`);
  console.log(`  curl -i -X POST -H 'content-type: application/json' -d '{"username":"ada"}' ${url}/login   # 5 per 15 min per account`);
  console.log(cliHint(store.env, env.PREFIX));
}
let failed = false;
if (url && demo && !signalled) {
  try {
    await tools.runDemo(url, `the ${FRAMEWORKS[framework]} example (${store.label})`);
  } catch (err) {
    console.error(err);
    failed = true;
  }
  forward('SIGTERM');
}
const ended = await exited;
await store.stop();
exitAs(failed ? { code: 1, signal: null } : ended);
