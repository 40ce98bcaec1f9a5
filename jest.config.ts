import { existsSync } from 'node:fs';
import type { Config } from 'jest';

const packages = ['core', 'express', 'fastify', 'koa', 'testing'];
const examples = ['express', 'fastify', 'koa'];

// Tests run from sources: no build needed, @floodgate/* maps to each package's src/.
const moduleNameMapper = {
  '^@floodgate/(core|express|fastify|koa|testing)$': '<rootDir>/packages/$1/src/index.ts',
  '^@floodgate/embedded-redis$': '<rootDir>/examples/embedded-redis/src/index.ts',
};
const transform: Config['transform'] = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }],
};

function project(displayName: string, roots: string[]): Config {
  return {
    displayName,
    rootDir: __dirname,
    roots,
    testEnvironment: 'node',
    testMatch: ['**/*.test.ts'],
    moduleNameMapper,
    transform,
  };
}

const config: Config = {
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 30_000,
  projects: [
    ...packages.map((p) => project(p, [`<rootDir>/packages/${p}`])),
    ...examples.map((e) => project(`example-${e}`, [`<rootDir>/examples/${e}`])),
    project('smoke', ['<rootDir>/test']),
    // The benchmark harness's pure parts only: the benchmarks run with `npm run bench`, never under jest.
    project('bench', ['<rootDir>/bench/src']),
  ].filter((p) => existsSync((p.roots as string[])[0]!.replace('<rootDir>', __dirname))),
};

export default config;
