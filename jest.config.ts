/**
 * Jest loads this file through ts-node: transpiled only, not type-checked again (`npm run typecheck` checks
 * it), which saves about 3 s of CPU each time jest starts.
 *
 * Node 22.18+ would load it by its own type stripping instead, as an ES module without `__dirname`: naming the
 * loader makes jest fall back to ts-node there, so every Node loads the same CommonJS config.
 *
 * @jest-config-loader ts-node
 * @jest-config-loader-options {"transpileOnly": true, "compilerOptions": {"module": "commonjs", "moduleResolution": "node10"}}
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from 'jest';

/*
 * One jest project per workspace that has tests, found from package.json's workspaces: a new adapter (or
 * example) is picked up from its own folder, with nothing to add here.
 */
const root = __dirname;
const workspaces: { dir: string; name: string }[] = [];
for (const pattern of (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces) {
  // A fixture (fixtures/nestjs-11: Nest 11, installed for the project 'nestjs (Nest 11)' below) holds no tests of its own.
  if (pattern.startsWith('fixtures/')) continue;
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
/*
 * Packages that ship ES modules only (NestJS 12 and its line; @fastify/static's content-disposition): jest's
 * module system on Node 20 cannot require() them, so test/esm-transform.mjs compiles them to CommonJS. Every
 * other file of node_modules is loaded as it is, Nest 11's (fixtures/nestjs-11) included.
 */
const ESM_ONLY = ['@nestjs', 'content-disposition'];
const ESM_TRANSFORM = ['/node_modules/.+\\.js$', '<rootDir>/test/esm-transform.mjs'] as const;
const transformIgnorePatterns = [
  `^(?!.*/node_modules/(${ESM_ONLY.join('|')})/).*/node_modules/`,
  '/fixtures/nestjs-11/node_modules/@nestjs/',
];
/*
 * TypeScript as jest loads it: transpiled file by file by swc, never type-checked (`npm run typecheck` checks
 * every file once). A workspace written as a Nest application (decorators on classes, their parameter types
 * read at run time) has a tsconfig.jest.json, and gets TypeScript's legacy decorators and their metadata.
 */
function typescript(decorators: boolean): [string, Record<string, unknown>] {
  return [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators },
        target: 'es2022',
        keepClassNames: true,
        ...(decorators ? { transform: { legacyDecorator: true, decoratorMetadata: true } } : {}),
      },
      module: { type: 'commonjs' },
      sourceMaps: 'inline',
    },
  ];
}
const transform: Config['transform'] = {
  '^.+\\.ts$': typescript(false),
  [ESM_TRANSFORM[0]]: ESM_TRANSFORM[1],
};

/** A workspace whose TypeScript needs settings of its own (a Nest app's decorators) has a tsconfig.jest.json. */
function transformOf(dir: string): Config['transform'] {
  if (!existsSync(join(root, dir, 'tsconfig.jest.json'))) return transform;
  return { '^.+\\.ts$': typescript(true), [ESM_TRANSFORM[0]]: ESM_TRANSFORM[1] };
}

function project(displayName: string, roots: string[], testMatch = ['**/*.test.ts'], globals: Record<string, string> = {}): Config {
  return {
    displayName,
    rootDir: root,
    roots,
    // Node's, holding Floodgate's process warnings back unless the test that caused them fails.
    testEnvironment: '<rootDir>/test/quiet-environment.ts',
    testMatch,
    moduleNameMapper,
    transform,
    transformIgnorePatterns,
    globals,
    setupFiles: ['<rootDir>/test/setup-server.ts'],
  };
}

/*
 * Two tiers (CONTRIBUTING.md, "Which tests to run"). FLOODGATE_TIER=quick is `npm test`: every test file
 * not named below, so a new file lands there; the shared suites whole on Express and their contract subset
 * on the other adapters. FLOODGATE_TIER=rest is `npm run test:all`: the files below, the rest of the shared
 * suites on the other adapters, the reruns per client library and on Valkey. Together the two run what
 * FLOODGATE_TIER unset runs (`npx jest <file>`, `npm test -w <package>`): every file whole, every project.
 */
const tier = process.env.FLOODGATE_TIER ?? '';
if (!['', 'quick', 'rest'].includes(tier)) throw new Error(`FLOODGATE_TIER is ${JSON.stringify(tier)}: 'quick', 'rest' or unset`);

/** Whole files (or folders, ending in /) run by `npm run test:all` only. */
const SECOND_TIER = [
  // The real-fault tier: a real redis-server paused, killed, restarted or failed over; Sentinel; several processes.
  // (The floods, the first connect and self-inflicted fail-open of packages/core/test/attacks/ run on a scripted
  // store in virtual time, in the first tier; their real servers are in resilience/.)
  'packages/core/test/resilience/',
  // Redis Cluster (a 6-node cluster each).
  'packages/core/test/cluster-equivalence.test.ts',
  'packages/core/test/concurrency-cluster.test.ts',
  'packages/core/test/reserve-cluster.test.ts',
  'packages/core/test/engine/overrides-cluster.test.ts',
  'packages/cli/test/cluster.test.ts',
  // A real Next.js app: `next build` (minutes on a small machine), then `next start`.
  'packages/next/test/next-app.test.ts',
  // The shared suites in a real Next.js server (packages/next/test/suite-factory.ts): a `next build` of their
  // app first (about 40 s, minutes on a loaded machine; kept for the next files and runs), so whole files here.
  'packages/next/test/conformance.test.ts',
  'packages/next/test/conformance-limits.test.ts',
  'packages/next/test/adversarial.test.ts',
  'packages/next/test/budget-conformance.test.ts',
  // The budget suite on tRPC: none of its contract tests is defined there (each reads GET /stream, which
  // tRPC's factory does not serve: Capabilities.stream), and a file of no test fails, so its rest runs whole here.
  'packages/trpc/test/budget-conformance.test.ts',
  // What a user gets: the built packages, the tarballs, a fresh clone, the examples, the docs and migration guides.
  'test/api-reference.test.ts',
  'test/docs.test.ts',
  'test/example-start.test.ts',
  'test/examples-standalone.test.ts',
  'test/fresh-clone.test.ts',
  'test/migration/',
  'test/option-types.test.ts',
  'test/pack.test.ts',
  'test/quick-starts.test.ts',
  'test/release.test.ts',
  'test/shipped-files.test.ts',
  'test/smoke.test.ts',
  'examples/',
  // The benchmark harness's own checks (the benchmarks run with `npm run bench`).
  'bench/',
];

/**
 * The shared suites (packages/testing/src) on every adapter but Express, which runs them whole in `npm test`:
 * their contract subset in `npm test`, the rest in `npm run test:all` (packages/testing/src/suite-part.ts).
 */
const SHARED_SUITES = ['conformance', 'adversarial', 'conformance-limits', 'budget-conformance'];
const SPLIT = [
  ...['fastify', 'koa', 'hono'].flatMap((p) => SHARED_SUITES.map((s) => `packages/${p}/test/${s}.test.ts`)),
  ...['express', 'fastify'].flatMap((platform) => SHARED_SUITES.map((s) => `packages/nestjs/test/${s}-${platform}.test.ts`)),
  // tRPC's procedures behind a real tRPC server (packages/trpc/test/app-factory.ts); its budget file is in SECOND_TIER above.
  ...SHARED_SUITES.filter((s) => s !== 'budget-conformance').map((s) => `packages/trpc/test/${s}.test.ts`),
  'packages/express/test/conformance-express4.test.ts',
  'packages/koa/test/conformance-koa2.test.ts',
];
// A name that no longer exists would leave its file in the wrong tier without a word: refuse it.
for (const entry of [...SECOND_TIER, ...SPLIT]) {
  if (!existsSync(join(root, entry))) throw new Error(`jest.config.ts names ${entry} in a tier, and there is no such file or folder`);
}
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** testPathIgnorePatterns / testMatch for entries: a folder is everything under it. */
const ignoring = (entries: string[]): string[] => entries.map((e) => `^${escape(join(root, e))}${e.endsWith('/') ? '' : '$'}`);
const matching = (entries: string[]): string[] => entries.map((e) => (e.endsWith('/') ? `<rootDir>/${e}**/*.test.ts` : `<rootDir>/${e}`));
/** The entries inside workspace `dir`; `${dir}/` when an entry is a folder holding it all. */
const under = (dir: string, entries: string[]): string[] =>
  entries.flatMap((e) => (e.startsWith(`${dir}/`) ? [e] : e.endsWith('/') && `${dir}/`.startsWith(e) ? [`${dir}/`] : []));

/** A workspace's projects in this tier: its own files, and its split files with the part this tier runs. */
function tiered(base: Config, dir: string): Config[] {
  if (tier === '') return [base];
  const second = under(dir, SECOND_TIER);
  const split = under(dir, SPLIT);
  const part = tier === 'quick' ? 'contract' : 'rest';
  const splitProject: Config[] =
    split.length === 0
      ? []
      : [
          {
            ...base,
            displayName: `${String(base.displayName)} (${part})`,
            testMatch: matching(split),
            globals: { ...base.globals, FLOODGATE_SUITE_PART: part },
          },
        ];
  if (tier === 'quick') {
    if (second.includes(`${dir}/`)) return splitProject;
    return [{ ...base, testPathIgnorePatterns: ignoring([...second, ...split]) }, ...splitProject];
  }
  return [...(second.length === 0 ? [] : [{ ...base, testMatch: matching(second) }]), ...splitProject];
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
 * NestJS 11: @floodgate/nestjs supports Nest 11 and 12. Its devDependencies are Nest 12; fixtures/nestjs-11
 * installs Nest 11 (its own node_modules), and this project runs the package's test files again with every
 * @nestjs package the tests or the package load mapped there (@nestjs/throttler, which supports both, stays
 * the one installed and meets Nest 11 through the same mapping). packages/nestjs/test/nest-version.test.ts checks
 * which Nest each project loaded.
 */
const NEST_PACKAGES = ['common', 'core', 'platform-express', 'platform-fastify', 'websockets', 'platform-ws', 'graphql', 'mercurius'];
const nest11Dir = join(root, 'fixtures', 'nestjs-11');
const nest11Mapper: Record<string, string> = { ...moduleNameMapper };
for (const name of NEST_PACKAGES) {
  const dir = dirname(require.resolve(`@nestjs/${name}/package.json`, { paths: [nest11Dir] }));
  nest11Mapper[`^@nestjs\\/${name}(\\/.*)?$`] = `${dir}$1`;
}
const nest11Project: Config = {
  ...project('nestjs (Nest 11)', ['<rootDir>/packages/nestjs'], ['**/*.test.ts'], { FLOODGATE_NEST_MAJOR: '11' }),
  moduleNameMapper: nest11Mapper,
  transform: transformOf('packages/nestjs'),
};

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
  // `npm test` runs with --coverage: the report, and a floor CI holds (a drop below it fails the run). It is
  // measured on npm test's tier alone: a test that moves to `npm run test:all` takes its coverage with it.
  collectCoverageFrom: ['packages/*/src/**/*.ts', '!packages/testing/**', '!**/*.test.ts'],
  coverageReporters: ['text-summary', 'lcov'],
  coverageThreshold: { global: { statements: 95, branches: 89, functions: 94, lines: 96 } },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  maxWorkers: 2,
  // How long a worker may take to exit once its files are done, before jest kills it and prints "A worker
  // process has failed to exit gracefully". A client library's own clean-up can outlive the last test by up
  // to 2 s (ioredis's disconnect() keeps a timer of its `disconnectTimeout`, 2 s by default, until the socket
  // closes): the worker exits by itself when it fires, and a green run stays quiet. Tests' own clients use
  // 100 ms (@floodgate/testing's connect()).
  workerGracefulExitTimeout: 5_000,
  testTimeout: 30_000,
  projects: [
    ...workspaces.flatMap(({ dir }) =>
      tiered(
        {
          ...project(dir.replace(/^packages\//, '').replace(/^examples\//, 'example-'), [`<rootDir>/${dir}`]),
          transform: transformOf(dir),
        },
        dir,
      ),
    ),
    ...tiered(project('smoke', ['<rootDir>/test']), 'test'),
    ...(tier === 'quick' ? [] : [...clientProjects, nest11Project, ...valkeyProjects]),
  ],
};

export default config;
