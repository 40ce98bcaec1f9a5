import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { CODE, PROGRAM_TIMEOUT_MS, programsOf, typeCheck } from './doc-blocks';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort, startRedis, uniquePrefix } from '@floodgate/testing';
import { PUBLISHED, npmEnv, packPublished, pinned, root, tarballSpecs, type Packed } from './packing';

/*
 * What a user gets: `npm pack` each published package (from its built dist/: `npm run test:all` builds first),
 * install the tarballs in a scratch app outside the repository (so nothing resolves to the workspace), and
 * use them from an ESM file, a CommonJS file and TypeScript files type-checked with "module": "nodenext".
 * One install serves every consumer. The framework and client versions are the lockfile's (test/packing.ts).
 */
const FROM_REGISTRY = [
  'ioredis',
  'express',
  'fastify',
  'hono',
  '@hono/node-server',
  'koa',
  '@koa/router',
  '@types/express',
  '@types/koa',
  '@types/node',
  'prom-client',
  '@opentelemetry/api',
  '@koa/bodyparser',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  '@nestjs/throttler',
  'reflect-metadata',
  'rxjs',
  'graphql',
  'graphql-yoga',
  '@trpc/server',
  '@trpc/client',
  '@modelcontextprotocol/sdk',
  'zod',
];

let work: string;
let app: string;
let packed: Packed[];
/** What npm printed installing the scratch app, warnings included, and then installing it again. */
let installLog: string;
let reinstallLog: string;

/** `npm install` in the scratch app at npm's default log level, so that its peer-dependency warnings show. */
function installWithWarnings(cwd: string): string {
  const args = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=warn'];
  const run = spawnSync('npm', args, { cwd, env: npmEnv(), encoding: 'utf8' });
  const log = `${run.stdout}${run.stderr}`;
  if (run.status !== 0) throw new Error(`npm ${args.join(' ')} failed (exit ${String(run.status)}):\n${log}`);
  return log;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'floodgate-pack-'));
  const tarballs = join(work, 'tarballs');
  app = join(work, 'app');
  mkdirSync(tarballs);
  mkdirSync(app);
  packed = packPublished(tarballs);
  const dependencies = tarballSpecs(packed, tarballs);
  for (const name of FROM_REGISTRY) dependencies[name] = pinned(name);
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'floodgate-scratch-app', private: true, dependencies }, null, 2)}\n`);
  installLog = installWithWarnings(app);
  reinstallLog = installWithWarnings(app);
  for (const f of readdirSync(join(__dirname, 'pack-consumer'))) copyFileSync(join(__dirname, 'pack-consumer', f), join(app, f));
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test('each tarball holds dist/, its bin, README.md, CHANGELOG.md, LICENSE and package.json, and nothing else', () => {
  expect(packed.map((p) => p.name).sort()).toEqual(PUBLISHED.map((p) => `@floodgate/${p}`));
  for (const p of packed) {
    const files = p.files.map((f) => f.path).sort();
    const manifest = JSON.parse(readFileSync(join(root, 'packages', p.name.replace('@floodgate/', ''), 'package.json'), 'utf8')) as {
      bin?: Record<string, string>;
    };
    const bins = Object.values(manifest.bin ?? {}).map((b) => b.replace(/^\.\//, ''));
    expect({
      name: p.name,
      stray: files.filter((f) => !f.startsWith('dist/') && !['README.md', 'CHANGELOG.md', 'LICENSE', 'package.json', ...bins].includes(f)),
    }).toEqual({ name: p.name, stray: [] });
    for (const f of [
      'README.md',
      'CHANGELOG.md',
      'LICENSE',
      'package.json',
      ...bins,
      'dist/index.js',
      'dist/index.mjs',
      'dist/index.d.ts',
      'dist/index.d.mts',
    ]) {
      expect({ name: p.name, has: f, present: files.includes(f) }).toEqual({ name: p.name, has: f, present: true });
    }
  }
});

test("beside the current NestJS (the lockfile's, 12) and @nestjs/throttler, npm reports no peer conflict, and installs again without one", () => {
  expect(pinned('@nestjs/core').split('.')[0]).toBe('12');
  const conflicts = (log: string): string[] =>
    log.split('\n').filter((line) => /ERESOLVE|overriding peer dependency|legacy-peer-deps/i.test(line));
  expect(conflicts(installLog)).toEqual([]);
  expect(conflicts(reinstallLog)).toEqual([]);
});

test('the installed adapters depend on a versioned core and share the one installed copy of it', () => {
  const core = JSON.parse(readFileSync(join(app, 'node_modules', '@floodgate', 'core', 'package.json'), 'utf8')) as { version: string };
  for (const adapter of ['express', 'fastify', 'hono', 'koa', 'nestjs', 'trpc']) {
    const pkg = JSON.parse(readFileSync(join(app, 'node_modules', '@floodgate', adapter, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(pkg.dependencies['@floodgate/core']).toBe(`^${core.version}`);
  }
  // No nested copy anywhere in the tree.
  const copies: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name);
      if (entry.name === 'core' && dir.endsWith(join('node_modules', '@floodgate'))) copies.push(path);
      walk(path);
    }
  };
  walk(join(app, 'node_modules'));
  expect(copies).toEqual([join(app, 'node_modules', '@floodgate', 'core')]);
});

/** Runs a consumer in the scratch app; it prints one JSON line of what each part answered. */
function consume(file: string): Record<string, unknown> {
  const out = execFileSync(process.execPath, [file, uniquePrefix('pack')], { cwd: app, encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
}

const expected = (format: string) => ({
  format,
  memory: [true, false],
  redis: [
    [true, 'redis'],
    [false, 'redis'],
  ],
  express: [200, 429],
  fastify: [200, 429],
  hono: [200, 429],
  koa: [200, 429],
  nestjs: [200, 429],
  sameConfigError: [true, true, true],
});

test.each([
  ['ESM', 'esm', 'esm.mjs'],
  ['CommonJS', 'cjs', 'cjs.cjs'],
])(
  '%s consumer: limiters in memory and on the test Redis, and an Express, Fastify, Hono, Koa and NestJS app each answer 200 then 429',
  (_label, format, file) => {
    const { core, coreOfAdapters, ...rest } = consume(file);
    expect(rest).toEqual(expected(format));
    // The adapters resolve @floodgate/core to the app's one copy.
    expect(dirname(core as string)).toBe(join(app, 'node_modules', '@floodgate', 'core', 'dist'));
    expect(coreOfAdapters).toEqual([core, core, core, core, core]);
  },
);

test('TypeScript consumers type-check with "module": "nodenext": ESM and CommonJS declarations, and each package README\'s example', () => {
  const readmes = PUBLISHED.map((p) => {
    const readme = readFileSync(join(app, 'node_modules', '@floodgate', p, 'README.md'), 'utf8');
    const code = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    if (!code) throw new Error(`packages/${p}/README.md has no \`\`\`ts example`);
    writeFileSync(join(app, `readme-${p}.mts`), code);
    return `readme-${p}.mts`;
  });
  // skipLibCheck: third-party declarations have errors of their own (@types/koa against its
  // content-disposition); typed.mts's @ts-expect-error lines fail if ours ever resolve to `any`. The
  // decorator settings are a Nest project's (the @floodgate/nestjs README's example).
  const tsconfig = {
    compilerOptions: {
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      strict: true,
      noEmit: true,
      types: ['node'],
      skipLibCheck: true,
    },
    files: ['typed.mts', 'typed.cts', ...readmes],
  };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  let output = '';
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    output = String((err as { stdout?: string }).stdout ?? err);
  }
  expect(output).toBe('');
}, 60_000);

test('the installed @floodgate/cli puts `floodgate` on the bin path of the app (npx floodgate)', () => {
  const out = execFileSync(join(app, 'node_modules', '.bin', 'floodgate'), ['--help'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  expect(out).toMatch(/^Usage: floodgate <command> \[options\]/);
});

test('the installed `floodgate --version` prints the packed versions of @floodgate/cli and of the @floodgate/core it runs with', () => {
  const version = (name: string): string => packed.find((p) => p.name === name)!.version;
  const floodgate = (...args: string[]): string =>
    execFileSync(join(app, 'node_modules', '.bin', 'floodgate'), args, { cwd: app, encoding: 'utf8', timeout: 30_000 });
  const [cli, core] = [version('@floodgate/cli'), version('@floodgate/core')];
  expect(floodgate('--version').split('\n').slice(0, 2)).toEqual([
    `@floodgate/cli ${cli}`,
    `@floodgate/core ${core} (reads the keys of applications on @floodgate/core ${core.split('.')[0]}.x)`,
  ]);
  expect(JSON.parse(floodgate('-v', '--json'))).toEqual({ cli, core });
});

/*
 * What a user copies first: the README's programs, and those of the pages it sends them to (the quick
 * starts, getting started per framework, the API reference, the policies and concurrency limits). They use only the
 * published packages and FROM_REGISTRY.
 */
const FIRST_PAGES = [
  'README.md',
  'docs/quick-start.md',
  'docs/express.md',
  'docs/fastify.md',
  'docs/hono.md',
  'docs/koa.md',
  'docs/graphql.md',
  'docs/trpc.md',
  'docs/core-api.md',
  'docs/refunds.md',
  'docs/plans.md',
  'docs/lockouts.md',
  'docs/lists.md',
  'docs/slow-down.md',
  'docs/concurrency.md',
  'docs/mcp.md',
];

test('every program of the README and its first pages runs from the scratch app, on the installed tarballs, against a Redis of its own', async () => {
  const programs = FIRST_PAGES.flatMap((page) => programsOf(root, page));
  expect(programsOf(root, 'docs/quick-start.md').length).toBeGreaterThanOrEqual(1);
  expect(programs.length).toBeGreaterThanOrEqual(8);
  const dir = join(app, 'readme');
  mkdirSync(dir);
  const fileOf = (b: { file: string; line: number; lang: string }): string =>
    `${b.file.replace(/[^A-Za-z0-9]+/g, '-')}-${b.line}.${CODE.get(b.lang)}`;
  const sources = programs.map((b) => {
    const file = fileOf(b);
    writeFileSync(join(dir, file), b.code);
    return file;
  });
  const compilerOptions = {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    strict: true,
    allowJs: true,
    types: ['node'],
    skipLibCheck: true,
  };
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { ...compilerOptions, outDir: 'out', rootDir: '.' }, files: sources }),
  );
  const output = typeCheck(root, dir);
  expect(output).toBe('');
  // The programs use the default prefix and expect a fresh server: a redis-server of this test's own.
  const redis = await startRedis();
  const failures: string[] = [];
  try {
    for (const b of programs) {
      const client = new Redis(redis.url);
      await client.flushall();
      client.disconnect();
      const js = join(dir, 'out', fileOf(b).replace(/\.([mc])ts$/, '.$1js'));
      const env = { ...process.env, REDIS_URL: redis.url, PORT: String(await freePort()) };
      try {
        await promisify(execFile)(process.execPath, [js], { cwd: dir, env, timeout: PROGRAM_TIMEOUT_MS, encoding: 'utf8' });
      } catch (err) {
        const e = err as { code?: unknown; stderr?: string };
        failures.push(`${b.file}:${b.line}: exit ${String(e.code)} ${e.stderr ?? ''}`);
      }
    }
  } finally {
    await redis.stop();
  }
  expect(failures).toEqual([]);
}, 360_000);
