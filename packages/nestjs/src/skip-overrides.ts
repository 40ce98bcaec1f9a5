import { declaredOn, skippedOn, type Declared, type Skipped } from './decorators';
import { handlersOf } from './discovered';

/*
 * A skip leaves out the limits it names (all of them, bare) of its class's handlers or of its handler,
 * those declared there included: `@SkipRateLimit()` on a controller silently drops a `@RateLimit()` one of
 * its handlers declares for itself. A limit a skip at its own level or above leaves out never runs where
 * it is declared; the application's start names each one in a warning (limits.ts).
 */

const LABEL = { rateLimit: '@RateLimit()', slowDown: '@SlowDown()', concurrency: '@Concurrency()' } as const;

const skipLabel = (skip: Skipped): string =>
  'all' in skip ? '@SkipRateLimit()' : `@SkipRateLimit(${skip.names.map((n) => `'${n}'`).join(', ')})`;

/**
 * Each limit declared on one of `classes` or on one of their handlers that a skip on the same class (or
 * a class it extends), or on the same handler, leaves out: `@RateLimit() 'search' on SearchController.find,
 * left out by @SkipRateLimit() on SearchController`. `nameOf`: a declared limit's name.
 */
export function limitsLeftOut(classes: Iterable<object>, nameOf: (d: Declared) => string): string[] {
  const out = new Set<string>();
  const check = (d: Declared, skips: readonly Skipped[]): void => {
    const name = nameOf(d);
    const skip = skips.find((s) => 'all' in s || s.names.includes(name));
    if (skip !== undefined) out.add(`${LABEL[d.kind]} '${name}' on ${d.where}, left out by ${skipLabel(skip)} on ${skip.where}`);
  };
  for (const cls of classes) {
    const onClass = skippedOn(cls, true);
    for (const d of declaredOn(cls, true)) check(d, onClass);
    for (const handler of handlersOf(cls)) {
      const skips = [...onClass, ...skippedOn(handler, false)];
      for (const d of declaredOn(handler, false)) check(d, skips);
    }
  }
  return [...out];
}
