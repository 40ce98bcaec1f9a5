import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * What a user installs, for the tests that install it outside the repository (test/pack.test.ts,
 * test/examples-standalone.test.ts): the published packages `npm pack`ed from their built dist/ (`npm run
 * test:all` builds first), and other packages at the lockfile's versions, so the npm cache `npm ci` filled answers most
 * of an install (--prefer-offline); the rest comes from the registry.
 */
export const root = join(__dirname, '..');
export const PUBLISHED = ['cli', 'core', 'express', 'fastify', 'graphql', 'hono', 'koa', 'mcp', 'metrics', 'nestjs', 'next', 'trpc'];

const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
/** The lockfile's version of a package the repository installs. */
export function pinned(name: string): string {
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`${name} is not in package-lock.json`);
  return version;
}

/** npm for a directory outside the repository: none of the `npm test` run's own npm_* settings but the user's cache, registry and config files. */
export function npmEnv(): NodeJS.ProcessEnv {
  const keep = /^npm_config_(cache|registry|userconfig|globalconfig|cafile|proxy|https_proxy|noproxy|strict_ssl)$/i;
  // A copy of process.env, filtered (typed as one: Next's types declare NODE_ENV required in ProcessEnv).
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || keep.test(k))) as NodeJS.ProcessEnv;
}
export function npm(args: string[], cwd: string): string {
  return execFileSync('npm', [...args, '--loglevel=error'], { cwd, env: npmEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface Packed {
  name: string;
  version: string;
  filename: string;
  files: { path: string }[];
}

/** `npm pack`s every published package into `destination`; throws when one is not built. */
export function packPublished(destination: string): Packed[] {
  for (const p of PUBLISHED) {
    if (!existsSync(join(root, 'packages', p, 'dist', 'index.js')))
      throw new Error(`packages/${p} is not built: run \`npm run build\` (npm run test:all does)`);
  }
  return JSON.parse(
    npm(['pack', '--json', '--pack-destination', destination, ...PUBLISHED.flatMap((p) => ['-w', `@floodgate/${p}`])], root),
  ) as Packed[];
}

/** The dependencies that install the packed tarballs in `destination`: `file:` specs by package name. */
export function tarballSpecs(packed: Packed[], destination: string): Record<string, string> {
  return Object.fromEntries(packed.map((p) => [p.name, `file:${join(destination, p.filename)}`]));
}
