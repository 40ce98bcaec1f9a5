import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/*
 * One test layout (CONTRIBUTING.md, "Running the tests"): every test of a workspace lives under its test/
 * folder, grouped like its src/ (packages/core/test/stores/ for packages/core/src/stores/), never beside its
 * source; and every workspace with tests has a `test` script, so `npm test -w <package>` runs its suite.
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
