import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/*
 * A Next app of these tests built with `next build --webpack` (about 40 s; minutes on a loaded machine), once:
 * the build is kept in a temporary folder named by a hash of the app's files and Next's version, so the test
 * files of one run, and the runs after, share it.
 */

const ROOT = join(__dirname, '..', '..', '..');
const NEXT = join(ROOT, 'node_modules', '.bin', 'next');

function filesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesOf(join(dir, e.name)) : [join(dir, e.name)]));
}

/** The build's folder: one per content of the app and version of Next. */
function buildDir(source: string): string {
  const hash = createHash('sha256');
  // The checkout too: a build refers to the node_modules it was built beside, which another checkout may not keep.
  hash.update(ROOT);
  hash.update(readFileSync(join(ROOT, 'node_modules', 'next', 'package.json')));
  for (const file of filesOf(source).sort()) hash.update(`${relative(source, file)}\0`).update(readFileSync(file));
  return join(tmpdir(), `floodgate-next-build-${hash.digest('hex').slice(0, 16)}`);
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

/**
 * The folder of the Next app at `source` built with `next build --webpack` (a copy of it, node_modules linked
 * to the repository's): built here, or by another jest worker (which holds the lock meanwhile), or before, by
 * a run of the same files on the same Next. next-app.test.ts builds its app with it too.
 */
export async function builtApp(source: string): Promise<string> {
  const dir = buildDir(source);
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
      cpSync(source, work, { recursive: true });
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
