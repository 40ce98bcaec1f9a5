/*
 * What the bench server (bench/src/http/apps-next.ts) hands the app before Next loads it: the variant's
 * Floodgate options (its Redis client, the shape's limits and identifiers) and the hand-written 429. A
 * global, as every bundle of the app sees the same one. Undefined while `next build` loads the modules.
 */
export const bench = globalThis[Symbol.for('floodgate.bench.next')];
