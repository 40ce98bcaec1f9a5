import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import './next-environment';

/*
 * The shared suites' Next.js app (test/suite-app): built once with `next build` (about 40 s, minutes on a
 * loaded machine; the build is kept in a folder named by a hash of the app's files and Next's version, so
 * the suite files of one run, and the runs after, build it once), then served in this process by Next's own
 * production server: `next({ dev: false, dir })`, the request handler of `next start` and of a custom server.
 * Its proxy.js and route handler run here, in the jest process, and answer with what the test set in a
 * globalThis slot (suite-factory.ts), so every option, function-valued ones included, is the test's own.
 */

const ROOT = join(__dirname, '..', '..', '..');
const SOURCE = join(__dirname, 'suite-app');
const NEXT = join(ROOT, 'node_modules', '.bin', 'next');

function filesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesOf(join(dir, e.name)) : [join(dir, e.name)]));
}

/** The build's folder: one per content of the app and version of Next. */
function buildDir(): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(ROOT, 'node_modules', 'next', 'package.json')));
  for (const file of filesOf(SOURCE).sort()) hash.update(`${relative(SOURCE, file)}\0`).update(readFileSync(file));
  return join(tmpdir(), `floodgate-next-suite-${hash.digest('hex').slice(0, 16)}`);
}

function run(cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(NEXT, ['build', '--webpack'], {
      cwd,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`next build failed (${code}):\n${output}`))));
  });
}

/** The built app's folder: built here, or by another jest worker (which holds the lock meanwhile), or before. */
async function built(): Promise<string> {
  const dir = buildDir();
  const lock = `${dir}.lock`;
  for (;;) {
    if (existsSync(join(dir, '.next', 'BUILD_ID'))) return dir;
    try {
      mkdirSync(lock);
    } catch {
      // Another worker builds it; a lock older than 15 minutes is a build that died.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 15 * 60_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    try {
      const work = `${dir}.${process.pid}`;
      rmSync(work, { recursive: true, force: true });
      cpSync(SOURCE, work, { recursive: true });
      symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
      await run(work);
      rmSync(dir, { recursive: true, force: true });
      renameSync(work, dir);
      return dir;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;
let started: Promise<{ handle: Handler; close(): Promise<void> }> | undefined;

/** Next's production request handler for the built suite app, started once per test file. */
export function nextHandler(): Promise<{ handle: Handler; close(): Promise<void> }> {
  started ??= (async () => {
    const dir = await built();
    const { default: next } = await import('next');
    const app = next({ dev: false, dir, quiet: true });
    await app.prepare();
    return { handle: app.getRequestHandler() as Handler, close: () => app.close() };
  })();
  return started;
}
