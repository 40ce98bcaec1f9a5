// Where two processes' CPU differs, symbol by symbol, per unit of work: two `perf report --sort sym -n --stdio`
// outputs (of `perf record -e cpu-clock -F <hz>` runs with `node --perf-basic-prof`), each with the units of
// work its run did (checks, requests). Prints µs per unit for each side and the difference, largest first.
//   node bench/scripts/perf-diff.mjs A.txt A_UNITS B.txt B_UNITS [hz=5000] [rows=30]
// bench/results/lone-check.md shows it used.
import { readFileSync } from 'node:fs';

const [a, aUnits, b, bUnits, hzArg = '5000', rowsArg = '30'] = process.argv.slice(2);
if (!a || !aUnits || !b || !bUnits) throw new Error('usage: perf-diff.mjs A.txt A_UNITS B.txt B_UNITS [hz] [rows]');
const usPerSample = 1e6 / Number(hzArg);

/** µs per unit by symbol (JIT names without their tier marks, paths from node_modules on). */
function load(file, units) {
  const bySymbol = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*[\d.]+%\s+(\d+)\s+\[.\]\s+(.*?)\s*$/.exec(line);
    if (!m) continue;
    const symbol = m[2].replace(/^JS:[*~^+]?/, 'JS:').replace(/\/\S*node_modules\//, '');
    bySymbol.set(symbol, (bySymbol.get(symbol) ?? 0) + (Number(m[1]) * usPerSample) / Number(units));
  }
  return bySymbol;
}
const A = load(a, aUnits);
const B = load(b, bUnits);
const sum = (m) => [...m.values()].reduce((x, y) => x + y, 0);
console.log(`total: ${sum(A).toFixed(2)} against ${sum(B).toFixed(2)} µs per unit (A - B: ${(sum(A) - sum(B)).toFixed(2)})`);
const rows = [...new Set([...A.keys(), ...B.keys()])]
  .map((s) => [s, A.get(s) ?? 0, B.get(s) ?? 0])
  .sort((x, y) => y[1] - y[2] - (x[1] - x[2]));
console.log('A µs   B µs   A - B  symbol');
for (const [s, x, y] of rows.slice(0, Number(rowsArg)))
  console.log(`${x.toFixed(3)}  ${y.toFixed(3)}  ${(x - y >= 0 ? '+' : '') + (x - y).toFixed(3)}  ${s}`);
