// Inclusive time of the functions in a V8 .cpuprofile (from `node --cpu-prof`) whose name or file matches a
// pattern: what a call and everything under it cost, counted once per sample even under recursion.
// Usage: node profile-inclusive.mjs FILE PATTERN [top] [requests]  (with requests: µs per request too)
import { readFileSync } from 'node:fs';

const [file, pattern, topArg, requestsArg] = process.argv.slice(2);
if (!file || !pattern) throw new Error('usage: profile-inclusive.mjs FILE PATTERN [top] [requests]');
const top = Number(topArg ?? 30);
const requests = requestsArg === undefined ? undefined : Number(requestsArg);
const match = new RegExp(pattern);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const { functionName, url, lineNumber } = n.callFrame;
  const short = url.replace(/^.*node_modules\//, '').replace(/^.*\/packages\//, 'packages/');
  return `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
};
const selfUs = new Map();
for (let i = 0; i < prof.samples.length; i++) selfUs.set(prof.samples[i], (selfUs.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
const inclusive = new Map();
let busy = 0;
for (const [id, us] of selfUs) {
  const leaf = byId.get(id);
  if (leaf.callFrame.functionName !== '(idle)') busy += us;
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const key = label(byId.get(at));
    if (seen.has(key) || !match.test(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + us);
  }
}
const fmt = (us) => (requests ? `${(us / requests).toFixed(2).padStart(7)} µs/req` : `${(us / 1000).toFixed(0).padStart(7)} ms`);
console.log(`busy ${fmt(busy)} (${(busy / 1e6).toFixed(2)} s)`);
for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`${fmt(us)}  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${k}`);
