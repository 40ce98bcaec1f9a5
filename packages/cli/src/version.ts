import { createRequire } from 'node:module';
import { join } from 'node:path';
import { jsonText, safe } from './format';

/** This package's version, and that of the @floodgate/core whose key layout it reads. */
export interface Versions {
  cli: string;
  core: string;
}

function versionOf(load: NodeRequire, manifest: string): string {
  try {
    const { version } = load(manifest) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Read from the package.json files at run time rather than inlined at build time, so that the core named is
 * the one this process loads: src/ (tests) and dist/ (built, installed) are both one level below the
 * package's root, and core is resolved from there as dist/'s own `require('@floodgate/core')` resolves it:
 * the workspace's link in the repository, node_modules in an app that installed the tarball.
 */
export function versions(): Versions {
  const load = createRequire(join(__dirname, '..', 'package.json'));
  return { cli: versionOf(load, './package.json'), core: versionOf(load, '@floodgate/core/package.json') };
}

/** `floodgate --version`: both versions, and which applications' keys this core reads (the same major). */
export function versionText(json: boolean): string {
  const { cli, core } = versions();
  if (json) return jsonText({ cli, core });
  return safe`@floodgate/cli ${cli}\n@floodgate/core ${core} (reads the keys of applications on @floodgate/core ${core.split('.')[0]}.x)`;
}
