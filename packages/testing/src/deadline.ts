import type { AdapterFactory, AppSpec } from './conformance';

/*
 * The deadline the shared suites give their limiters unless a test gives its own. Core's default (250 ms) is
 * what an application wants; in a test it turned a busy machine (two jest workers beside other jobs) into a
 * decision of the failure policy instead of Redis, and a test that counted Redis's answers failed. Far above
 * any check's time, it is never reached by a store that answers. A test about deadlines, slow or silent
 * stores sets `timeoutMs` itself.
 */
export const TEST_DEADLINE = { timeoutMs: 10_000 } as const;

/** `options` with TEST_DEADLINE's timeoutMs, unless they set one or share a `limiter` (which has its own). */
export function withTestDeadline<T>(options: T): T {
  if (typeof options !== 'object' || options === null) return options;
  const own = options as Record<string, unknown>;
  if ('limiter' in own || own['timeoutMs'] !== undefined) return options;
  return { ...own, ...TEST_DEADLINE } as T;
}

/** A factory whose apps' limiters get TEST_DEADLINE where the spec sets no deadline (see withTestDeadline). */
export function deadlineFactory(factory: AdapterFactory): AdapterFactory {
  const makeApp = (spec: AppSpec): ReturnType<AdapterFactory['makeApp']> => {
    const out: AppSpec = { ...spec };
    if (spec.global !== undefined) out.global = withTestDeadline(spec.global);
    if (spec.concurrency !== undefined) out.concurrency = withTestDeadline(spec.concurrency);
    if (spec.slowDown !== undefined) out.slowDown = withTestDeadline(spec.slowDown);
    if (spec.routes !== undefined) {
      out.routes = Object.fromEntries(Object.entries(spec.routes).map(([path, o]) => [path, withTestDeadline(o)]));
    }
    return factory.makeApp(out);
  };
  return Object.assign(Object.create(factory) as AdapterFactory, { makeApp });
}
