import { shared } from './state';

/*
 * What a process keeps per key prefix besides the shared memory stores: the private ones (a limiter on a
 * test clock, a `failure: 'local'` fallback), held weakly so a limiter nobody references is collected with
 * its store, and found by prefix when a test resets it (engine/testing.ts).
 */

interface Clearable {
  clear(): void;
}

/** Sweep collected entries once a prefix holds this many (the registry stays bounded by the live ones). */
const SWEEP_AT = 64;

/** A process-wide registry (one per `name`) of clearable things per prefix, held weakly. */
export function byPrefix<T extends Clearable>(name: string): { add(prefix: string, item: T): T; clear(prefix: string): void } {
  const all = shared(`byPrefix.${name}`, () => new Map<string, Set<WeakRef<T>>>());
  const live = (prefix: string): Set<WeakRef<T>> => {
    let set = all.get(prefix);
    if (set === undefined) all.set(prefix, (set = new Set()));
    return set;
  };
  return {
    add(prefix, item) {
      const set = live(prefix);
      if (set.size >= SWEEP_AT) for (const ref of set) if (ref.deref() === undefined) set.delete(ref);
      set.add(new WeakRef(item));
      return item;
    },
    clear(prefix) {
      const set = all.get(prefix);
      if (set === undefined) return;
      for (const ref of set) {
        const item = ref.deref();
        if (item === undefined) set.delete(ref);
        else item.clear();
      }
    },
  };
}
