import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import ts from 'typescript';
import { freePort, startRedis, type StartedRedis } from '@floodgate/testing';
import { blocksOf, type Block } from './doc-blocks';
import { npm, pinned, root } from './packing';

/*
 * The quick starts (the README's and docs/quick-start.md's) as a new user installs them: each program in a
 * scratch app outside the repository that has exactly the packages its install line names (the README's
 * "Install"), as the README's "install them from a clone" says: `npm pack -w packages`, then the tarballs of the line's @floodgate
 * packages and of @floodgate/core, and the line's other packages at the lockfile's versions. Then it runs:
 * a server on a free port (the program's 3000 replaced), against a redis-server of this test's own, must
 * answer its route limit of 3 with 200, 200, 200, 429; a program that ends must exit 0. A quick start that is a
 * file of a framework's app (no server of its own) has its imports loaded. A package the
 * program imports and the line lacks fails here with ERR_MODULE_NOT_FOUND. (test/docs.test.ts type-checks
 * the same programs; this one transpiles them as a user's build would, with the settings the README shows.)
 */
interface QuickStart {
  title: string;
  block: Block;
  /** The `npm install` line's packages. */
  packages: string[];
  /** compilerOptions the README shows beside the program (a ```json block of the same quick start). */
  compilerOptions: ts.CompilerOptions;
}

const README = readFileSync(join(root, 'README.md'), 'utf8');
const lineOf = (text: string): number => README.slice(0, README.indexOf(text)).split('\n').length;

const installLines: string[][] = blocksOf(root, 'README.md')
  .blocks.filter((b) => b.lang === 'sh' && b.line > lineOf('## Install') && b.line < lineOf('## Quick start'))
  .flatMap((b) => b.code.split('\n'))
  .map((l) => /^npm install ([^#]+)/.exec(l)?.[1]?.trim().split(/\s+/))
  .filter((p): p is string[] => p !== undefined && p.some((x) => x.startsWith('@floodgate/')));

/**
 * The quick starts of a page: the README's are its "Quick start" section (Express), docs/quick-start.md's the
 * whole page (every other framework). Each is a ```ts block under a bold title line.
 */
function quickStarts(file: string): QuickStart[] {
  const text = readFileSync(join(root, file), 'utf8');
  const lines = text.split('\n');
  let start = 0;
  let end = lines.length;
  if (file === 'README.md') {
    start = lineOf('## Quick start');
    end = start + lines.slice(start).findIndex((l) => l.startsWith('## '));
  }
  const inSection = blocksOf(root, file).blocks.filter((b) => b.line > start && b.line < end + 1);
  return inSection
    .filter((b) => b.lang === 'ts')
    .map((block) => {
      const floodgate = /from '(@floodgate\/[a-z]+)'/.exec(block.code)?.[1];
      const packages = installLines.find((l) => l.includes(floodgate ?? '-'));
      if (packages === undefined) throw new Error(`${file}:${block.line}: no install line of README.md names ${floodgate}`);
      // The quick start's title: the last bold line above it; its settings: a json block after that title.
      const titleLine = lines.slice(0, block.line).reduce((at, l, i) => (/^\*\*[^*]+\*\*/.test(l) ? i : at), -1);
      const json = inSection.find((b) => b.lang === 'json' && b.line > titleLine && b.line < block.line);
      const compilerOptions = json ? (JSON.parse(json.code) as { compilerOptions: ts.CompilerOptions }).compilerOptions : {};
      return { title: /^\*\*([^*]+)\*\*/.exec(lines[titleLine]!)![1]!, block, packages, compilerOptions };
    });
}

const starts = [...quickStarts('README.md'), ...quickStarts(join('docs', 'quick-start.md'))];
let work: string;
let tarballs: string;
let redis: StartedRedis;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'floodgate-quick-starts-'));
  tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  // The README's command, from the repository (npm run test:all has built it).
  npm(['pack', '-w', 'packages', '--pack-destination', tarballs], root);
  redis = await startRedis();
}, 240_000);

afterAll(async () => {
  if (work) rmSync(work, { recursive: true, force: true });
  await redis?.stop();
});

test('every install line has a quick start, and every quick start an install line', () => {
  expect(starts.length).toBeGreaterThanOrEqual(6);
  expect(installLines.map((l) => l.find((p) => p.startsWith('@floodgate/'))).sort()).toEqual(
    [...new Set(starts.map((s) => /from '(@floodgate\/[a-z]+)'/.exec(s.block.code)![1]))].sort(),
  );
});

/** The tarball `npm pack` made of a package (`@floodgate/core` → floodgate-core-<version>.tgz). */
function tarball(name: string): string {
  const prefix = `${name.replace('@', '').replace('/', '-')}-`;
  const file = readdirSync(tarballs).find((f) => f.startsWith(prefix) && /^\d/.test(f.slice(prefix.length)));
  if (file === undefined) throw new Error(`npm pack made no tarball of ${name}`);
  return join(tarballs, file);
}

/** A scratch app with exactly `packages` installed: @floodgate ones (and core) from their tarballs. */
function install(dir: string, packages: string[]): void {
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'quick-start', private: true, type: 'module' }, null, 2)}\n`);
  const specs = [...new Set([...packages, '@floodgate/core'])].map((p) => (p.startsWith('@floodgate/') ? tarball(p) : `${p}@${pinned(p)}`));
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', ...specs], dir);
}

/** The program as the user's build makes it: TypeScript transpiled to an ES module, the README's settings applied. */
function build(dir: string, start: QuickStart, port: number): string {
  const source = start.block.code.replace(/\b3000\b/g, String(port));
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, ...start.compilerOptions },
  });
  const file = join(dir, 'main.mjs');
  writeFileSync(file, outputText);
  return file;
}

function listening(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000; // a hang guard: a busy machine starts Nest in seconds
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      if (child.exitCode !== null) return reject(new Error(`the program exited with ${child.exitCode} before it listened:\n${output()}`));
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listened on ${port}:\n${output()}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** A server quick start listens on 3000 and limits GET /search to 3; a whole program (no fragment marker) ends by itself. */
const isServer = (start: QuickStart): boolean => /\b3000\b/.test(start.block.code) && start.block.code.includes("'search'");

describe.each(starts.map((s) => [s.title, s] as const))('the %s quick start, installed by its line alone', (title, start) => {
  test(`loads${isServer(start) || !start.block.fragment ? ' and runs' : ''} (${start.packages.join(' ')})`, async () => {
    const dir = join(work, title.replace(/\W+/g, '-'));
    install(dir, start.packages);
    // Every package the program imports loads in the app its line installed.
    const imports = [...new Set([...start.block.code.matchAll(/from '([^'.][^']*)'/g)].map((m) => m[1]!))].filter(
      (m) => !m.startsWith('node:'),
    );
    const load = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', imports.map((m) => `await import(${JSON.stringify(m)});`).join('\n')],
      {
        cwd: dir,
        encoding: 'utf8',
      },
    );
    expect({ imports, status: load.status, stderr: load.stderr }).toEqual({ imports, status: 0, stderr: '' });
    if (!isServer(start) && start.block.fragment) return; // a file of a framework's app: its imports load, the framework runs it

    const port = await freePort();
    const main = build(dir, start, port);
    const admin = new Redis(redis.url);
    await admin.flushall();
    await admin.quit();
    const child = spawn(process.execPath, [main], {
      cwd: dir,
      env: { ...process.env, REDIS_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      if (!isServer(start)) {
        // (What it prints is the check's answer: on a machine too busy to connect within the deadline, the
        // failure policy's. test/docs.test.ts runs the same program in the repository.)
        expect({ code: await exited, output }).toEqual({ code: 0, output: expect.stringMatching(/^(true|false) /) as string });
        return;
      }
      await listening(port, child, () => output);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/search`)).status);
      expect({ statuses, output }).toEqual({
        statuses: [200, 200, 200, 429],
        output: expect.not.stringMatching(/ERR_MODULE_NOT_FOUND|Error:/) as string,
      });
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  }, 300_000);
});
