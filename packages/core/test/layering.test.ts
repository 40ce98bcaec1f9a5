import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import ts from 'typescript';

/*
 * The layers of packages/core/src (docs/design.md, section 3), checked over every import a source file
 * makes (type imports, export-from and import() types included, as the TypeScript compiler reads them):
 * every file is an entry point or sits in a layer's folder; a layer imports only the layers before it and
 * never an entry point; no file imports a file that imports it back, however far round; Node's http is
 * imported by http/node.ts alone. eslint.config.mjs says the same per folder (no-restricted-imports), as a
 * file is written. Tests live in packages/core/test (test/test-layout.test.ts), and may import from any layer.
 */
const SRC = join(__dirname, '..', 'src');
const LAYERS = ['kernel', 'config', 'scripts', 'stores', 'engine', 'http'];
const ENTRY_POINTS = ['index.ts', 'adapter.ts', 'admin.ts', 'testing.ts'];

function sources(dir = ''): string[] {
  return readdirSync(join(SRC, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface Imports {
  /** The files of src it imports (resolved, '.ts' included). */
  files: string[];
  /** The packages and built-in modules it imports. */
  modules: string[];
}

function importGraph(): Map<string, Imports> {
  const files = sources();
  const known = new Set(files);
  const graph = new Map<string, Imports>();
  for (const file of files) {
    const imports: Imports = { files: [], modules: [] };
    for (const { fileName } of ts.preProcessFile(readFileSync(join(SRC, file), 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) {
        imports.modules.push(fileName);
        continue;
      }
      const base = posix.normalize(posix.join(posix.dirname(file), fileName));
      const target = [`${base}.ts`, `${base}/index.ts`].find((candidate) => known.has(candidate));
      if (target === undefined) throw new Error(`${file} imports '${fileName}', which is no file of src`);
      imports.files.push(target);
    }
    graph.set(file, imports);
  }
  return graph;
}

/** Every set of files that import each other (strongly connected, Tarjan), each with one cycle through it. */
function cycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = stack.splice(stack.indexOf(v));
    if (component.length > 1 || (edges.get(v) ?? []).includes(v)) found.push(cycleThrough(component.sort(), edges));
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One cycle within a strongly connected set, from its first file back to it: what to read to break it. */
function cycleThrough(component: string[], edges: ReadonlyMap<string, readonly string[]>): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of edges.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0]!)!);
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return component;
}

const graph = importGraph();
const layerOf = (file: string): number => LAYERS.indexOf(file.split('/')[0]!);

test('every source file is an entry point or sits in the folder of its layer', () => {
  expect(graph.size).toBeGreaterThan(50);
  const astray = [...graph.keys()].filter((file) => !ENTRY_POINTS.includes(file) && layerOf(file) < 0);
  expect(astray).toEqual([]);
});

test('a layer imports only the layers before it, and never an entry point', () => {
  const against: string[] = [];
  for (const [file, { files }] of graph) {
    if (ENTRY_POINTS.includes(file)) continue;
    for (const target of files) {
      if (ENTRY_POINTS.includes(target) || layerOf(target) > layerOf(file)) against.push(`${file} -> ${target}`);
    }
  }
  expect(against).toEqual([]);
});

test('no two files import each other, however far round (type imports included)', () => {
  expect(cycles(new Map([...graph].map(([file, { files }]) => [file, files])))).toEqual([]);
});

test("Node's http is imported by http/node.ts alone", () => {
  const importers = [...graph].filter(([, { modules }]) => modules.some((m) => m === 'node:http' || m === 'http')).map(([file]) => file);
  expect(importers).toEqual(['http/node.ts']);
});

test('the checks above find what they look for', () => {
  const edges = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts', 'd.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['d.ts']],
    ['e.ts', ['a.ts']],
  ]);
  expect(cycles(edges)).toEqual([
    ['d.ts', 'd.ts'],
    ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
  ]);
  expect(layerOf('engine/concurrency/limiter.ts')).toBeGreaterThan(layerOf('stores/redis.ts'));
  expect(layerOf('limiter.ts')).toBe(-1);
});
