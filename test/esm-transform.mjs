import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { transformSync, version } from '@swc/core';

/*
 * NestJS 12 (and the packages of its version line: @nestjs/graphql 14, @nestjs/mercurius 14...) ships ES
 * modules only. Node 20.19 and later require() them, but jest's module system on Node 20 does not (it
 * supports require(esm) from Node 24.9, jestjs/jest#15275), so the tests load them through this transform,
 * as CommonJS: imports become require() calls, `import()` a promise of one, `import.meta.url` this file's
 * URL, and a module's own `require` (createRequire) the one CommonJS gives it. jest.config.ts decides which files of node_modules come here (ESM_ONLY); the code a user
 * runs loads the real ES modules, which test/pack.test.ts and test/examples-standalone.test.ts check.
 */
const self = readFileSync(new URL(import.meta.url), 'utf8');

/** ES2022 in, CommonJS out: `import()` becomes a promise of a require(). */
const options = {
  jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' },
  module: { type: 'commonjs' },
  sourceMaps: false,
  swcrc: false,
  configFile: false,
};

export default {
  process(source, path) {
    // A CommonJS file among them (a package.json without "type": "module" in a subfolder) is left as it is.
    if (!/^\s*(import|export)\s/m.test(source)) return { code: source };
    const code = source
      .replace(/\bimport\.meta\.url\b/g, "require('node:url').pathToFileURL(__filename).href")
      // `const require = createRequire(import.meta.url)`: a CommonJS module has its require already.
      .replace(/^(const|let|var) require = /m, '$1 esmRequire = ');
    if (/\bimport\.meta\b/.test(code))
      throw new Error(`${path}: import.meta other than import.meta.url; test/esm-transform.mjs does not translate it`);
    return { code: transformSync(code, { ...options, filename: path }).code };
  },
  getCacheKey(source, path) {
    return createHash('sha1').update(self).update(version).update(path).update(source).digest('hex');
  },
};
