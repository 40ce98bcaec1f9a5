import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * `npm run release:dry` without its build step (npm run test:all has built): scripts/release.mjs runs
 * `npm publish --dry-run` for each public package, dependencies first. Nothing is published.
 */
const root = join(__dirname, '..');
const PUBLISHED = ['cli', 'core', 'express', 'fastify', 'hono', 'koa', 'mcp', 'metrics', 'nestjs'];

test('the release dry run publishes every public package, each after its dependencies, with public access', () => {
  const run = spawnSync(process.execPath, [join(root, 'scripts', 'release.mjs'), '--dry-run'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr }).toEqual({ status: 0, stderr: '' });
  const published = [...run.stdout.matchAll(/^\+ (@floodgate\/[a-z-]+)@(\S+)$/gm)].map((m) => m[1]!);
  expect([...published].sort()).toEqual(PUBLISHED.map((p) => `@floodgate/${p}`));
  for (const p of PUBLISHED) {
    const pkg = JSON.parse(readFileSync(join(root, 'packages', p, 'package.json'), 'utf8')) as {
      name: string;
      dependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(pkg.dependencies ?? {}).filter((d) => published.includes(d))) {
      expect(`${dep} before ${pkg.name}: ${published.indexOf(dep) < published.indexOf(pkg.name)}`).toBe(`${dep} before ${pkg.name}: true`);
    }
  }
  // publishConfig.access: a scoped package would otherwise be published as restricted (and refused).
  expect(run.stderr.match(/with tag latest and public access \(dry-run\)/g)).toHaveLength(PUBLISHED.length);
});

test("every published package's CHANGELOG.md (shipped in its tarball) has an entry for the version it would publish", () => {
  const missing = PUBLISHED.filter((p) => {
    const { version } = JSON.parse(readFileSync(join(root, 'packages', p, 'package.json'), 'utf8')) as { version: string };
    let changelog = '';
    try {
      changelog = readFileSync(join(root, 'packages', p, 'CHANGELOG.md'), 'utf8');
    } catch {
      return true;
    }
    return !new RegExp(`^## ${version.replace(/\./g, '\\.')}$`, 'm').test(changelog);
  });
  expect(missing).toEqual([]);
});
