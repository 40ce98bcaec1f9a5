// After a build: source maps name their sources relative to the map, never by the build machine's absolute
// path. tsup writes the CommonJS chunks of a split build (@floodgate/core) with the chunk's own absolute path
// among its sources; a user's debugger and error reports would show where the package was built.
//   node scripts/relative-sourcemaps.mjs <dist folder>
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

const dist = resolve(process.argv[2] ?? 'dist');
let fixed = 0;
for (const name of readdirSync(dist)) {
  if (!name.endsWith('.map')) continue;
  const file = join(dist, name);
  const map = JSON.parse(readFileSync(file, 'utf8'));
  const local = (s) => (typeof s === 'string' && isAbsolute(s) ? relative(dirname(file), s).split(sep).join('/') : s);
  const sources = Array.isArray(map.sources) ? map.sources : [];
  if (!sources.some((s) => isAbsolute(s)) && !(typeof map.file === 'string' && isAbsolute(map.file))) continue;
  map.sources = sources.map(local);
  if (map.file !== undefined) map.file = local(map.file);
  writeFileSync(file, JSON.stringify(map));
  fixed++;
}
if (fixed > 0) console.log(`relative-sourcemaps: ${fixed} map(s) in ${relative(process.cwd(), dist) || '.'} made relative`);
