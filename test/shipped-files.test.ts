import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * What the published packages ship (their dist/, built by `npm run test:all` first) says nothing of the machine that
 * built it, and their types read as written: no absolute path of the build (source maps named the chunk by
 * it), and no name a declaration bundler made unique (a `MaybePromise$1` in a user's type error).
 */
const root = join(__dirname, '..');
const published = ['core', 'express', 'fastify', 'hono', 'koa', 'cli', 'mcp', 'metrics', 'nestjs'];

function shipped(): { file: string; text: string }[] {
  return published.flatMap((p) => {
    const dist = join(root, 'packages', p, 'dist');
    if (!existsSync(dist)) throw new Error(`packages/${p} is not built: run \`npm run build\` (npm run test:all does)`);
    return readdirSync(dist).map((f) => ({ file: `packages/${p}/dist/${f}`, text: readFileSync(join(dist, f), 'utf8') }));
  });
}

test('no shipped file holds the absolute path it was built at', () => {
  const files = shipped();
  expect(files.length).toBeGreaterThan(20);
  expect(files.filter((f) => f.text.includes(root)).map((f) => f.file)).toEqual([]);
});

test('declarations use the type names of the source (no bundler-renamed `Name$1`)', () => {
  const renamed = shipped()
    .filter((f) => /\.d\.m?ts$/.test(f.file))
    .flatMap((f) => [...f.text.matchAll(/\b[A-Za-z_]\w*\$\d+\b/g)].map((m) => `${f.file}: ${m[0]}`));
  expect([...new Set(renamed)]).toEqual([]);
});

/*
 * The CommonJS build runs the syntax Node 20 has: tsup's code-split CJS path (sucrase) would otherwise turn
 * every `?.`, `??` and class field into helper calls (`_optionalChain([a, 'optionalAccess', _ => _.b])`
 * allocates an array and closures per access) on the check's hot path, for every user who `require()`s.
 */
test('the CommonJS build keeps native optional chaining and nullish coalescing (no transpiler helpers)', () => {
  const helpers = shipped()
    .filter((f) => /\.c?js$/.test(f.file))
    .flatMap((f) =>
      [...f.text.matchAll(/function (_optionalChain|_nullishCoalesce|_optionalChainDelete)\b/g)].map((m) => `${f.file}: ${m[1]}`),
    );
  expect(helpers).toEqual([]);
});
