import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');

/** Every published entry point (packages not marked private, each subpath of their exports), from the workspaces. */
function entryPoints(): string[] {
  const out: string[] = [];
  for (const dir of readdirSync(join(root, 'packages'))) {
    const manifest = join(root, 'packages', dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; private?: boolean; exports?: Record<string, unknown> };
    if (pkg.private) continue;
    for (const sub of Object.keys(pkg.exports ?? { '.': {} }))
      if (sub !== './package.json') out.push(sub === '.' ? pkg.name : `${pkg.name}/${sub.slice(2)}`);
  }
  return out;
}

/** Names some entry points must export, beyond loading at all (any other entry point must export something). */
const WANTED: Record<string, string[]> = {
  '@floodgate/core': ['createLimiter', 'ConfigError', 'StoreError', 'normaliseIp'],
  '@floodgate/core/adapter': ['createHttpLimiter', 'createHttpSlowDown', 'createLimiter', 'ConfigError', 'watchServerOf'],
  '@floodgate/express': ['rateLimit', 'concurrency', 'slowDown'],
  '@floodgate/fastify': ['default', 'rateLimit', 'RateLimitError', 'concurrency', 'slowDown'],
  '@floodgate/hono': ['rateLimit', 'concurrency', 'slowDown'],
  '@floodgate/koa': ['rateLimit', 'concurrency', 'slowDown'],
  '@floodgate/trpc': ['rateLimit', 'rateLimitContext', 'rateLimitResponseMeta', 'rateLimitErrorFormatter', 'RateLimitExceededError'],
  '@floodgate/mcp': ['rateLimit', 'defaultIdentity', 'DENIAL_META_KEY'],
  '@floodgate/core/admin': ['indexKey', 'registryKey', 'topKey', 'slotTag', 'algorithmTag'],
  '@floodgate/core/testing': ['manualClock', 'testPrefix', 'resetPrefix'],
  '@floodgate/cli': ['run', 'EXIT', 'USAGE'],
};
/** Entry points that only do something when loaded (`--require @floodgate/next/register`): they export nothing. */
const SIDE_EFFECTS_ONLY = new Set(['@floodgate/next/register']);
const packages: [string, string[]][] = entryPoints().map((name) => [name, WANTED[name] ?? []]);

test('the workspaces publish at least the entry points named above', () => {
  for (const name of Object.keys(WANTED)) expect(packages.map(([n]) => n)).toContain(name);
});

function run(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();
}

describe.each(packages)('%s', (name, exportsWanted) => {
  const [, pkg, entry = 'index'] = name.split('/');
  const dist = join(root, 'packages', pkg!, 'dist');

  test('is built (run `npm run build`)', () => {
    for (const ext of ['js', 'mjs', 'd.ts', 'd.mts']) expect(existsSync(join(dist, `${entry}.${ext}`))).toBe(true);
  });

  test('loads with require() (CommonJS)', () => {
    const keys = JSON.parse(run(['-e', `console.log(JSON.stringify(Object.keys(require(${JSON.stringify(name)}))))`]));
    if (SIDE_EFFECTS_ONLY.has(name)) expect(keys).toEqual([]);
    else expect(keys.length).toBeGreaterThan(0);
    for (const e of exportsWanted) expect(keys).toContain(e);
  });

  test('loads with import (ESM)', () => {
    const code = `const m = await import(${JSON.stringify(name)}); console.log(JSON.stringify(Object.keys(m)))`;
    const keys = JSON.parse(run(['--input-type=module', '-e', code]));
    for (const e of exportsWanted) expect(keys).toContain(e);
  });
});

test('@floodgate/core exports the application API and nothing else (docs/design.md, section 8)', () => {
  const keys = JSON.parse(run(['-e', "console.log(JSON.stringify(Object.keys(require('@floodgate/core')).sort()))"]));
  expect(keys).toEqual([
    'ArgumentError',
    'ConfigError',
    'FloodgateError',
    'StoreError',
    'createConcurrencyLimiter',
    'createLimiter',
    'defineClient',
    'normaliseIp',
  ]);
});

test('ESM and CommonJS copies in one process share one state: the name registry, and the error classes', () => {
  const code = `
    const cjs = require('@floodgate/core');
    import('@floodgate/core').then((esm) => {
      const out = { twoCopies: esm.createLimiter !== cjs.createLimiter };
      cjs.createLimiter({ name: 'dual', prefix: 'dual-load', limits: { limit: 1, window: '1s' } });
      try {
        esm.createLimiter({ name: 'dual', prefix: 'dual-load', limits: { limit: 2, window: '1s' } });
        out.refused = false;
      } catch (err) {
        out.refused = true;
        out.instanceofCjs = err instanceof cjs.ConfigError;
        out.instanceofEsm = err instanceof esm.ConfigError;
        out.notStoreError = !(err instanceof cjs.StoreError);
      }
      console.log(JSON.stringify(out));
    });`;
  expect(JSON.parse(run(['-e', code]))).toEqual({
    twoCopies: true,
    refused: true,
    instanceofCjs: true,
    instanceofEsm: true,
    notStoreError: true,
  });
});
