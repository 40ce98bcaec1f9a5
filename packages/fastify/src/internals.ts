import type { FastifyReply, FastifyRequest } from 'fastify';

/*
 * The only place this adapter reads Fastify's internals (docs/design.md, section 8), for one optimisation:
 * when a thrown denial would meet nothing but Fastify's default error handler, the hook sends the same
 * response itself and skips the error machinery (most of a denied request's cost). Everything here
 * degrades to "not plain": denials are thrown, which is always correct. test/internals.test.ts fails when
 * a Fastify upgrade changes what these read, so the optimisation is never lost silently.
 *
 *   - the route context of a request: a symbol property described 'fastify.context'
 *   - its errorHandler: a plain object whose `func` is named 'defaultErrorHandler' when the app set none
 *   - its onError: null when no onError hook applies
 *   - a reply's logger without a level check: abstract-logging's stand-in, whose methods are all `noop`
 *
 * And one more, for route-coverage.ts (which routes are in the plugin's scope): an encapsulated plugin's
 * instance is made with Object.create(parent), so every instance inside a scope has the scope's instance on
 * its prototype chain. Should that change, no route is found in scope and nothing is reported: never a
 * false warning.
 */

let contextSymbol: symbol | null | undefined;

/** Fastify's route context of a request (found by its symbol's description, once), or undefined. */
export function routeContext(request: FastifyRequest): object | undefined {
  contextSymbol ??= Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null;
  const context = contextSymbol === null ? undefined : (request as unknown as Record<symbol, unknown>)[contextSymbol];
  return typeof context === 'object' && context !== null ? context : undefined;
}

/** Whether the route's errors meet Fastify's default error handler (no setErrorHandler, no route errorHandler). */
export function defaultErrorHandler(context: object): boolean {
  const { errorHandler } = context as { errorHandler?: { func?: { name?: string } } };
  return (
    typeof errorHandler === 'object' &&
    errorHandler !== null &&
    Object.getPrototypeOf(errorHandler) === Object.prototype &&
    errorHandler.func?.name === 'defaultErrorHandler'
  );
}

/**
 * Whether a denial thrown on this route would meet only Fastify's own error handler, no onError hook, and
 * no response schema (the default handler would serialize with it).
 */
export function plainErrorHandling(context: object, request: FastifyRequest): boolean {
  return (
    (context as { onError?: unknown }).onError === null &&
    defaultErrorHandler(context) &&
    // No routeOptions (hidden by a hook, or another Fastify): whether a response schema applies is unknown.
    typeof request.routeOptions === 'object' &&
    request.routeOptions !== null &&
    request.routeOptions.schema?.response === undefined
  );
}

/** Whether Fastify's default error handler would log nothing (it logs a 4xx at info level). */
export function quietAtInfo(log: FastifyReply['log']): boolean {
  const { isLevelEnabled } = log as { isLevelEnabled?: unknown };
  if (typeof isLevelEnabled === 'function') return !(isLevelEnabled as (level: string) => boolean).call(log, 'info');
  // No logger configured: Fastify's abstract-logging stand-in, whose methods are all `noop`.
  return log.info.name === 'noop';
}

/** `instance` and the instances it is encapsulated in, innermost first, up to the one fastify() made. */
export function enclosing(instance: object): object[] {
  const chain: object[] = [];
  for (let at: object | null = instance; at !== null && at !== Object.prototype; at = Object.getPrototypeOf(at) as object | null)
    chain.push(at);
  return chain;
}

/** Whether `instance` is `scope` or encapsulated inside it. */
export function withinScope(scope: object, instance: object): boolean {
  return instance === scope || Object.prototype.isPrototypeOf.call(scope, instance);
}
