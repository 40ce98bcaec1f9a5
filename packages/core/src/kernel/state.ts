/*
 * Process-wide state, one instance per process whatever copies of this package it loads (docs/design.md,
 * section 3): an application that imports @floodgate/core from ESM while a dependency requires it from
 * CommonJS gets two copies of the code, and without this two limiter registries, two breakers per Redis
 * client, two sets of block caches. Each piece lives on globalThis under a registered symbol, made by the
 * first copy that asks and found by the others. The `v1` names the layout of these objects: a copy that
 * changes one must change its name.
 */
const ROOT = Symbol.for('@floodgate/core.state.v1');

type Store = Map<string, unknown>;

function root(): Store {
  const g = globalThis as { [ROOT]?: Store };
  g[ROOT] ??= new Map();
  return g[ROOT];
}

/** The process's one instance of `name`, made by `make` the first time any copy asks for it. */
export function shared<T>(name: string, make: () => T): T {
  const all = root();
  if (!all.has(name)) all.set(name, make());
  return all.get(name) as T;
}
