import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** What each published package must export, from its built dist/ (npm test builds first). */
const packages: Record<string, string[]> = {
  '@floodgate/core': ['createLimiter', 'ConfigError', 'StoreError', 'createHttpLimiter', 'normaliseIp'],
  '@floodgate/express': ['rateLimit'],
  '@floodgate/fastify': [],
  '@floodgate/koa': [],
};
const root = join(__dirname, '..');

function run(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();
}

describe.each(Object.entries(packages))('%s', (name, exportsWanted) => {
  const dist = join(root, 'packages', name.split('/')[1]!, 'dist');

  test('is built (run `npm run build`)', () => {
    expect(existsSync(join(dist, 'index.js'))).toBe(true);
    expect(existsSync(join(dist, 'index.mjs'))).toBe(true);
    expect(existsSync(join(dist, 'index.d.ts'))).toBe(true);
    expect(existsSync(join(dist, 'index.d.mts'))).toBe(true);
  });

  test('loads with require() (CommonJS)', () => {
    const keys = JSON.parse(run(['-e', `console.log(JSON.stringify(Object.keys(require(${JSON.stringify(name)}))))`]));
    for (const e of exportsWanted) expect(keys).toContain(e);
  });

  test('loads with import (ESM)', () => {
    const code = `const m = await import(${JSON.stringify(name)}); console.log(JSON.stringify(Object.keys(m)))`;
    const keys = JSON.parse(run(['--input-type=module', '-e', code]));
    for (const e of exportsWanted) expect(keys).toContain(e);
  });
});
