import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from 'jest';

/*
 * One jest project per workspace that has tests, found from package.json's workspaces: a new adapter (or
 * example) is picked up from its own folder, with nothing to add here.
 */
const root = __dirname;
const workspaces: { dir: string; name: string }[] = [];
for (const pattern of (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces) {
  const dirs = pattern.endsWith('/*')
    ? readdirSync(join(root, pattern.slice(0, -2))).map((d) => `${pattern.slice(0, -2)}/${d}`)
    : [pattern];
  for (const dir of dirs) {
    const manifest = join(root, dir, 'package.json');
    if (existsSync(manifest)) workspaces.push({ dir, name: (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name });
  }
}

// Tests run from sources: no build needed, @floodgate/<x> maps to its workspace's src/index.ts (entry points
// with a subpath, such as @floodgate/core/adapter, to src/<subpath>.ts).
const moduleNameMapper: Record<string, string> = {};
for (const { dir, name } of workspaces) {
  if (!existsSync(join(root, dir, 'src', 'index.ts'))) continue;
  moduleNameMapper[`^${name.replace('/', '\\/')}$`] = `<rootDir>/${dir}/src/index.ts`;
  moduleNameMapper[`^${name.replace('/', '\\/')}\\/([a-z-]+)$`] = `<rootDir>/${dir}/src/$1.ts`;
}
const transform: Config['transform'] = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }],
};

function project(displayName: string, roots: string[]): Config {
  return {
    displayName,
    rootDir: root,
    roots,
    testEnvironment: 'node',
    testMatch: ['**/*.test.ts'],
    moduleNameMapper,
    transform,
  };
}

const config: Config = {
  // `npm test` runs with --coverage: the report, and a floor CI holds (a drop below it fails the run).
  collectCoverageFrom: ['packages/*/src/**/*.ts', '!packages/testing/**', '!**/*.test.ts'],
  coverageReporters: ['text-summary', 'lcov'],
  coverageThreshold: { global: { statements: 90, branches: 80, functions: 90, lines: 90 } },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 30_000,
  projects: [
    ...workspaces.map(({ dir }) => project(dir.replace(/^packages\//, '').replace(/^examples\//, 'example-'), [`<rootDir>/${dir}`])),
    project('smoke', ['<rootDir>/test']),
  ],
};

export default config;
