import { execFileSync } from 'node:child_process';
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

/** A workspace whose TypeScript needs settings of its own (a Nest app's decorators) has a tsconfig.jest.json. */
function transformOf(dir: string): Config['transform'] {
  if (!existsSync(join(root, dir, 'tsconfig.jest.json'))) return transform;
  return { '^.+\\.ts$': ['ts-jest', { tsconfig: `<rootDir>/${dir}/tsconfig.jest.json` }] };
}

function project(displayName: string, roots: string[], testMatch = ['**/*.test.ts'], globals: Record<string, string> = {}): Config {
  return {
    displayName,
    rootDir: root,
    roots,
    testEnvironment: 'node',
    testMatch,
    moduleNameMapper,
    transform,
    globals,
    setupFiles: ['<rootDir>/test/setup-server.ts'],
  };
}

/*
 * The same proofs on every client (docs/clients.md): the suites whose limiters take storeClient() run again
 * per client library, FLOODGATE_CLIENT naming it (packages/testing/src/clients.ts). The default projects
 * above run them on ioredis; packages/core/test/clients.test.ts runs every client single and Cluster.
 */
const PER_CLIENT = [
  'packages/core/test/check.test.ts',
  'packages/core/test/algorithms.test.ts',
  'packages/core/test/model.test.ts',
  'packages/core/test/undo-receipts.test.ts',
  'packages/core/test/engine/overrides.test.ts',
  'packages/express/test/conformance.test.ts',
];
const clientProjects = (['iovalkey', 'node-redis', 'glide'] as const).map((kind) =>
  project(
    `clients:${kind}`,
    ['<rootDir>/packages'],
    PER_CLIENT.map((f) => `<rootDir>/${f}`),
    { FLOODGATE_CLIENT: kind },
  ),
);

/*
 * Valkey: when valkey-server is installed (and the run is not pointed at one server by REDIS_URL or
 * FLOODGATE_REDIS_SERVER), the client and core suites run once more on a Valkey the global setup starts, and
 * every server those suites start themselves is a valkey-server too (test/setup-server.ts).
 */
function which(name: string): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
const valkey = process.env.REDIS_URL || process.env.FLOODGATE_REDIS_SERVER ? '' : which('valkey-server');
if (valkey) process.env.FLOODGATE_VALKEY_SERVER = valkey;
const ON_VALKEY = [
  'packages/core/test/clients.test.ts',
  'packages/core/test/check.test.ts',
  'packages/core/test/algorithms.test.ts',
  'packages/core/test/scripts.test.ts',
  'packages/core/test/undo-receipts.test.ts',
  'packages/core/test/failure.test.ts',
  'packages/core/test/cluster-equivalence.test.ts',
];
const valkeyProjects = valkey
  ? [
      project(
        'valkey',
        ['<rootDir>/packages'],
        ON_VALKEY.map((f) => `<rootDir>/${f}`),
        { FLOODGATE_SERVER: 'valkey' },
      ),
    ]
  : [];

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
    ...workspaces.map(({ dir }) => ({
      ...project(dir.replace(/^packages\//, '').replace(/^examples\//, 'example-'), [`<rootDir>/${dir}`]),
      transform: transformOf(dir),
    })),
    project('smoke', ['<rootDir>/test']),
    ...clientProjects,
    ...valkeyProjects,
  ],
};

export default config;
