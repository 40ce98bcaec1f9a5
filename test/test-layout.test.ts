import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

/*
 * One test layout (CONTRIBUTING.md, "Running the tests"): every test of a workspace lives under its test/
 * folder, grouped like its src/ (packages/core/test/stores/ for packages/core/src/stores/), never beside its
 * source; every workspace with tests has a `test` script, so `npm test -w <package>` runs its suite; and
 * every test file runs in one of the two tiers (jest.config.ts), a new one in `npm test` unless it is named.
 */
const root = join(__dirname, '..');

function workspaces(): string[] {
  const patterns = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
  return patterns
    .flatMap((pattern) =>
      pattern.endsWith('/*') ? readdirSync(join(root, pattern.slice(0, -2))).map((dir) => `${pattern.slice(0, -2)}/${dir}`) : [pattern],
    )
    .filter((dir) => existsSync(join(root, dir, 'package.json')));
}

function testsUnder(dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : testsUnder(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('no test file sits beside its source: each lives under its workspace test/ folder', () => {
  const found = workspaces();
  expect(found).toEqual(expect.arrayContaining(['packages/core', 'packages/express', 'bench']));
  expect(found.flatMap((dir) => testsUnder(`${dir}/src`))).toEqual([]);
});

test('every workspace with tests has a test script that runs them', () => {
  const withTests = workspaces().filter((dir) => testsUnder(`${dir}/test`).length > 0);
  expect(withTests).toEqual(expect.arrayContaining(['packages/core', 'packages/cli', 'examples/express', 'bench']));
  const missing = withTests.filter((dir) => {
    const script = (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts
      ?.test;
    return script === undefined || !script.includes(`jest ${dir}/`);
  });
  expect(missing).toEqual([]);
});

test('every test file runs in npm test or npm run test:all; only the split shared suites and the per-client reruns in both', async () => {
  // What jest itself selects in each tier (FLOODGATE_TIER, jest.config.ts), not a copy of its rules.
  const listed = async (tier: string): Promise<string[]> => {
    const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
    const env = { ...process.env, FLOODGATE_TIER: tier };
    const { stdout } = await promisify(execFile)(process.execPath, [jest, '--listTests'], { cwd: root, env, maxBuffer: 1 << 24 });
    return stdout
      .split('\n')
      .filter((line) => line.endsWith('.test.ts'))
      .map((line) => relative(root, line).split('\\').join('/'))
      .sort();
  };
  const [all, quick, rest] = await Promise.all([listed(''), listed('quick'), listed('rest')]);
  expect(all).toEqual(expect.arrayContaining(['test/test-layout.test.ts', 'packages/core/test/check.test.ts']));
  expect(all.filter((file) => !quick.includes(file) && !rest.includes(file))).toEqual([]);
  expect(quick).toContain('test/test-layout.test.ts');
  // In both: a shared suite split in two parts, or a file npm test runs whole that test:all reruns per client
  // or on Nest 11 (the project 'nestjs (Nest 11)': every file of packages/nestjs).
  const both = quick.filter((file) => rest.includes(file));
  const shared = /^packages\/(fastify|koa|hono|nestjs|express|trpc)\/test\/(conformance|adversarial|budget-conformance)/;
  const rerun = (file: string): boolean => file.startsWith('packages/core/test/') || file.startsWith('packages/nestjs/test/');
  expect(both.filter((file) => !shared.test(file) && !rerun(file))).toEqual([]);
}, 60_000);
