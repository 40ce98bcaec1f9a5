import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/*
 * docs/api, the API reference TypeDoc generates from the TSDoc comments (`npm run docs:api`): it covers
 * every entry point of every published package, and it is what the sources generate today.
 */
const root = join(__dirname, '..');
const config = JSON.parse(readFileSync(join(root, 'typedoc.json'), 'utf8')) as { entryPoints: string[] };

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
}

test('every entry point of every published package is in the reference', () => {
  const published = readdirSync(join(root, 'packages'))
    .map((p) => ({
      p,
      pkg: JSON.parse(readFileSync(join(root, 'packages', p, 'package.json'), 'utf8')) as { private?: boolean; exports?: object },
    }))
    .filter(({ pkg }) => !pkg.private);
  expect(published.length).toBeGreaterThanOrEqual(6);
  const expected = published.flatMap(({ p, pkg }) =>
    Object.keys(pkg.exports ?? { '.': 1 })
      .filter((k) => k !== './package.json')
      .map((k) => `packages/${p}/src/${k === '.' ? 'index' : k.slice(2)}.ts`),
  );
  expect([...config.entryPoints].sort()).toEqual([...expected].sort());
});

test('docs/api is what `npm run docs:api` generates from the sources now', () => {
  const out = mkdtempSync(join(tmpdir(), 'fg-api-'));
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--out', out, '--logLevel', 'Warn'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 480_000, // a hang guard: typedoc over every package takes minutes on a busy machine
    });
    const read = (dir: string): Record<string, string> =>
      Object.fromEntries(files(dir).map((f) => [relative(dir, f), readFileSync(f, 'utf8')]));
    const generated = read(out);
    const committed = read(join(root, 'docs', 'api'));
    expect(Object.keys(committed).sort()).toEqual(Object.keys(generated).sort());
    const stale = Object.keys(generated).filter((f) => generated[f] !== committed[f]);
    expect({ stale, fix: 'npm run docs:api' }).toEqual({ stale: [], fix: 'npm run docs:api' });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 500_000);
