import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { TEST_DEADLINE, freePort, startRedis, type StartedRedis } from '@floodgate/testing';
import { applyFigures, figureDocs, figures, readResults } from '../bench/src/doc-figures';
import { CODE, FRAGMENT, PROGRAM_TIMEOUT_MS, blocksOf, typeCheck, type Block } from './doc-blocks';

/*
 * Docs that cannot drift (docs/design.md, "Code blocks in the docs"). Every fenced block of README.md,
 * docs/*.md, docs/migrating/*.md and the package READMEs names its language. A TypeScript or JavaScript
 * block is a complete program unless the line right before its opening fence is `<!-- fragment -->`:
 * every program is type-checked (one tsc run, "module": "nodenext", strict, against the built packages as a
 * user installs them), then run against a redis-server of this test's own (REDIS_URL, PORT set; the server
 * is flushed between programs) and must exit with code 0 on its own within PROGRAM_TIMEOUT_MS. Other
 * languages (sh, text, json, ...) are not checked. The quick starts (the README's and docs/quick-start.md's)
 * are fragments (a server that keeps listening), but such a fragment that imports what it uses is
 * type-checked all the same, so what a user reads first cannot drift from the API. And the benchmark figures
 * the docs quote are the results files' (bench/src/doc-figures.ts).
 */
const root = join(__dirname, '..');
function docFiles(): string[] {
  const md = (dir: string): string[] =>
    readdirSync(join(root, dir))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(dir, f));
  const packages = readdirSync(join(root, 'packages')).flatMap((p) => {
    try {
      readFileSync(join(root, 'packages', p, 'README.md'));
      return [join('packages', p, 'README.md')];
    } catch {
      return [];
    }
  });
  return ['README.md', ...md('docs'), ...md(join('docs', 'migrating')), ...packages];
}

const files = docFiles();
const all = files.map((file) => ({ file, ...blocksOf(root, file) }));
const programs = all.flatMap((d) => d.blocks).filter((b) => CODE.has(b.lang) && !b.fragment);
/** The quick starts' fragments that stand alone (they import what they use): type-checked, not run. */
const readmeFragments = all
  .filter((d) => d.file === 'README.md' || d.file === join('docs', 'quick-start.md'))
  .flatMap((d) => d.blocks)
  .filter((b) => CODE.has(b.lang) && b.fragment && /^import /m.test(b.code));
const nameOf = (b: Block): string => `${b.file.replace(/[^A-Za-z0-9]+/g, '-')}-${b.line}`;

let work: string;
let redis: StartedRedis;
let typeErrors: Map<string, string[]>;

beforeAll(async () => {
  for (const p of ['core', 'express', 'fastify', 'graphql', 'hono', 'koa', 'mcp', 'metrics', 'nestjs', 'next', 'trpc']) {
    if (!readdirSync(join(root, 'packages', p)).includes('dist'))
      throw new Error(`packages/${p} is not built: run \`npm run build\` (npm run test:all does)`);
  }
  redis = await startRedis();
  // In the repository, so the programs resolve @floodgate/* (the built packages) and their dependencies as
  // an installed app does; removed afterwards.
  work = mkdtempSync(join(root, '.docs-check-'));
  const sources = [...programs, ...readmeFragments].map((b) => {
    const file = `${nameOf(b)}.${CODE.get(b.lang)}`;
    writeFileSync(join(work, file), b.code);
    return file;
  });
  // The decorator settings are a Nest project's (docs/nestjs.md); the other programs have no decorators.
  const tsconfig = {
    compilerOptions: {
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      strict: true,
      allowJs: true,
      outDir: 'out',
      rootDir: '.',
      types: ['node'],
      skipLibCheck: true,
    },
    files: sources,
  };
  writeFileSync(join(work, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  const output = typeCheck(root, work);
  typeErrors = new Map();
  for (const line of output.split('\n').filter(Boolean)) {
    const file = /^([^(]+)\(/.exec(line)?.[1] ?? '';
    const errors = typeErrors.get(file) ?? [];
    errors.push(line);
    typeErrors.set(file, errors);
  }
}, 120_000);

/** tsc's errors for a block, each located at its line in the doc. */
function typeErrorsOf(b: Block): string[] {
  return (typeErrors.get(`${nameOf(b)}.${CODE.get(b.lang)}`) ?? []).map((e) =>
    e.replace(/^[^(]+\((\d+),(\d+)\)/, (_m, l: string, c: string) => `${b.file}:${b.line + Number(l)}:${c}`),
  );
}

afterAll(async () => {
  if (work) rmSync(work, { recursive: true, force: true });
  await redis?.stop();
});

test("the README's quick starts type-check as written (fragments: a server that keeps listening is not run)", () => {
  expect(readmeFragments.length).toBeGreaterThanOrEqual(3);
  expect(readmeFragments.flatMap(typeErrorsOf)).toEqual([]);
});

test('the docs have code blocks, and every fence names its language (`text` for a diagram or output)', () => {
  expect(programs.length).toBeGreaterThanOrEqual(10);
  expect(all.filter((d) => d.unlabelled.length > 0).map((d) => `${d.file}: lines ${d.unlabelled.join(', ')}`)).toEqual([]);
});

test('every fragment marker stands right before a TypeScript or JavaScript block', () => {
  const stray: string[] = [];
  for (const file of files) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (line.trim() !== FRAGMENT) return;
      const lang = /^\s*```\s*(\S*)/.exec(lines[i + 1] ?? '')?.[1];
      if (lang === undefined || !CODE.has(lang)) stray.push(`${file}:${i + 1}`);
    });
  }
  expect(stray).toEqual([]);
});

test('every benchmark figure the docs quote is what bench/results/*.json say (npm run bench:report rewrites them)', () => {
  const values = figures(readResults());
  const quoted: string[] = [];
  const drifted: string[] = [];
  const unknown: string[] = [];
  for (const doc of figureDocs(root)) {
    const text = readFileSync(join(root, doc), 'utf8');
    quoted.push(...[...text.matchAll(/<!-- bench:([a-z0-9-]+) -->/g)].map((m) => `${doc}:${m[1]}`));
    const regenerated = applyFigures(text, values, unknown);
    if (regenerated !== text) drifted.push(doc);
  }
  expect({ unknown, drifted }).toEqual({ unknown: [], drifted: [] });
  // The performance page's two tables and the algorithms page's per-algorithm figures at least.
  expect(quoted).toEqual(
    expect.arrayContaining([
      'docs/performance.md:http-table',
      'docs/performance.md:core-table',
      'docs/algorithms.md:core-us-sliding-window',
    ]),
  );
});

test("docs/express.md's demo table is what `npm run demo` prints (the times aside)", async () => {
  const doc = readFileSync(join(root, 'docs', 'express.md'), 'utf8');
  const table = /```text\n(┌[\s\S]*?)```/.exec(doc)?.[1];
  // `npm run demo` without npm: builds (cached after the build of npm run test:all), starts the example on this test's Redis, drives it.
  const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'scripts', 'example.mjs'), 'demo'], {
    cwd: root,
    env: { ...process.env, REDIS_URL: redis.url },
    timeout: 120_000,
    encoding: 'utf8',
  });
  // Rows of the table: cells trimmed, the times (t=, Retry-After) masked: they depend on when the run starts.
  const rows = (text: string): string[][] =>
    text
      .split('\n')
      .filter((l) => l.startsWith('│'))
      .map((l) =>
        l
          .split('│')
          .slice(1, -1)
          .map((c) => c.trim().replace(/t=\d+/g, 't=…'))
          .map((c, i, all) => (i === all.length - 1 && /^\d+$/.test(c) ? 'seconds' : c)),
      );
  expect(table).toBeDefined();
  expect(rows(table!)).toEqual(rows(stdout));
}, 130_000);

describe.each(programs.map((b) => [`${b.file}:${b.line}`, b] as const))('%s', (_, block) => {
  test('type-checks ("module": "nodenext", strict)', () => {
    expect(typeErrorsOf(block)).toEqual([]);
  });

  test(
    'runs against Redis and exits 0',
    async () => {
      const client = new Redis(redis.url);
      await client.flushall();
      client.disconnect();
      const js = join(work, 'out', `${nameOf(block)}.${CODE.get(block.lang)!.replace('t', 'j')}`);
      // The programs are as a user writes them (no timeoutMs): FLOODGATE_TIMEOUT_MS gives their limiters the
      // test deadline, so a busy machine's slow first connection is not the failure policy's answer (docs/testing.md).
      const env = {
        ...process.env,
        REDIS_URL: redis.url,
        PORT: String(await freePort()),
        FLOODGATE_TIMEOUT_MS: String(TEST_DEADLINE.timeoutMs),
      };
      let failure = '';
      try {
        await promisify(execFile)(process.execPath, [js], { cwd: work, env, timeout: PROGRAM_TIMEOUT_MS, encoding: 'utf8' });
      } catch (err) {
        const e = err as { code?: unknown; killed?: boolean; stdout?: string; stderr?: string };
        failure = `${e.killed ? `did not exit within ${PROGRAM_TIMEOUT_MS} ms` : `exit code ${String(e.code)}`}\n${e.stdout ?? ''}${e.stderr ?? ''}`;
      }
      expect({ program: `${block.file}:${block.line}`, failure }).toEqual({
        program: `${block.file}:${block.line}`,
        failure: '',
      });
    },
    PROGRAM_TIMEOUT_MS + 5_000,
  );
});
