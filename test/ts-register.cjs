'use strict';
/*
 * `node -r <this file> file.ts`: TypeScript for the child processes tests start (a worker with a skewed
 * clock, a node:test file under fake timers, processes behind one Redis), loaded as CommonJS and transpiled
 * file by file by swc as jest's own transform does (jest.config.ts): no type-checking, no TypeScript
 * compiler to load (ts-node took about 2 s to start such a child, this about 0.3 s). Decorators are
 * TypeScript's legacy ones with their metadata, as a Nest application needs (jest.config.ts gives them to
 * Nest workspaces; the benchmark's NestJS servers load through this file too).
 */
const { readFileSync } = require('node:fs');
const Module = require('node:module');
const { transformSync } = require('@swc/core');

const options = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
  swcrc: false,
  configFile: false,
};

Module._extensions['.ts'] = function compile(module, filename) {
  const { code } = transformSync(readFileSync(filename, 'utf8'), { ...options, filename });
  module._compile(code, filename);
};
