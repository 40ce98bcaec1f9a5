// `npm run release` / `npm run release:dry` (both build first): publishes the public packages under
// packages/ one at a time, each after the packages it depends on (core, then the adapters), and stops at
// the first failure, so an adapter never reaches the registry before the core version it needs.
// (`changeset publish` would publish them all at once, in no order.) A version already on the registry
// is skipped, so a release that stopped half-way can be run again. After a real release, `changeset tag`
// tags each published version in git.
//   node scripts/release.mjs [--dry-run] [any other npm publish flag, e.g. --otp 123456 or --tag next]
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const dryRun = args.includes('--dry-run');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The public packages under packages/, dependencies first. */
export function publishOrder() {
  const all = readdirSync(join(root, 'packages'))
    .map((dir) => join(root, 'packages', dir, 'package.json'))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')))
    .filter((pkg) => !pkg.private);
  const names = new Set(all.map((p) => p.name));
  const order = [];
  const visit = (pkg, path) => {
    if (order.includes(pkg)) return;
    if (path.includes(pkg.name)) throw new Error(`release: dependency cycle ${[...path, pkg.name].join(' -> ')}`);
    const deps = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies }).filter((d) => names.has(d));
    for (const d of deps.sort())
      visit(
        all.find((p) => p.name === d),
        [...path, pkg.name],
      );
    order.push(pkg);
  };
  for (const pkg of all.sort((a, b) => a.name.localeCompare(b.name))) visit(pkg, []);
  return order;
}

function npmRun(argv, options = {}) {
  return spawnSync(npm, argv, { cwd: root, encoding: 'utf8', stdio: options.capture ? 'pipe' : 'inherit' });
}

/** Whether name@version is on the registry already (a 404 means no; any other failure stops the release). */
function published(name, version) {
  const r = npmRun(['view', `${name}@${version}`, 'version', '--json'], { capture: true });
  if (r.status === 0) return r.stdout.trim() !== '';
  if (/E404|404 Not Found/.test(r.stderr)) return false;
  process.stderr.write(r.stderr);
  throw new Error(`release: could not ask the registry about ${name}@${version}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const order = publishOrder();
  console.log(`release${dryRun ? ' (dry run)' : ''}: ${order.map((p) => `${p.name}@${p.version}`).join(', ')}`);
  for (const pkg of order) {
    if (!dryRun && published(pkg.name, pkg.version)) {
      console.log(`release: ${pkg.name}@${pkg.version} is on the registry already; skipped`);
      continue;
    }
    const r = npmRun(['publish', '-w', pkg.name, ...args]);
    if (r.status !== 0) {
      console.error(`release: publishing ${pkg.name}@${pkg.version} failed; nothing after it was published`);
      process.exit(r.status ?? 1);
    }
  }
  if (!dryRun) {
    const tagged = spawnSync(process.execPath, [join(root, 'node_modules', '@changesets', 'cli', 'bin.js'), 'tag'], {
      cwd: root,
      stdio: 'inherit',
    });
    if (tagged.status !== 0) process.exit(tagged.status ?? 1);
    console.log('release: done; push the tags with `git push --follow-tags`');
  }
}
