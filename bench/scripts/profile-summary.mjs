// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function and per package, top N.
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = prof.timeDeltas;
for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (dt[i] ?? 0));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fns = new Map();
const pkgs = new Map();
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = byId.get(id).callFrame;
  const short = url.replace(/^.*node_modules\//, '').replace(/^.*\/packages\//, 'packages/');
  const key = `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  const pkg = !url
    ? functionName
    : url.startsWith('node:')
      ? 'node internals'
      : (/node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url)?.[1] ?? short.split('/').slice(0, 2).join('/'));
  pkgs.set(pkg, (pkgs.get(pkg) ?? 0) + us);
}
const show = (m, n) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .forEach(([k, us]) => console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`));
console.log(`total ${(total / 1e6).toFixed(2)} s sampled\n-- by package --`);
show(pkgs, 12);
console.log('-- by function (self) --');
show(fns, top);
