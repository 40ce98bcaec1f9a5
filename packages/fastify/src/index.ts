import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { ConfigError, HTTP_OPTION_KEYS, LIMITER_OPTION_KEYS, assertKnownOptions, createHttpLimiter, describeValue, errorBody, warned } from '@floodgate/core';
import type { Decision, HttpLimiter, HttpOptions, HttpOutcome, Limiter } from '@floodgate/core';

export type RateLimitHook = 'onRequest' | 'preValidation' | 'preHandler';
const HOOKS: readonly RateLimitHook[] = ['onRequest', 'preValidation', 'preHandler'];

/** A route's own limiter, `config: { rateLimit: {...} }`: it ADDS to the global one. */
export interface RouteRateLimitOptions extends HttpOptions<FastifyRequest> {
  /** When this route's limiter runs; default: the plugin's `hook`. */
  hook?: RateLimitHook;
}

export interface RateLimitPluginOptions extends RouteRateLimitOptions {
  /** false: only routes with `config.rateLimit` are limited. Default true. */
  global?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The tightest Floodgate decision of the limiters that ran on this request. */
    rateLimit?: Decision;
  }
  interface FastifyContextConfig {
    rateLimit?: RouteRateLimitOptions | false;
  }
}

/** A denial (or the 503 of `failure: 'closed'`), thrown so the app's own error handler can shape it. */
export class RateLimitError extends Error {
  readonly statusCode: number;
  /** The JSON body Floodgate sends when the app has no error handler of its own. */
  readonly body: object;
  readonly decision: Decision;
  constructor(outcome: HttpOutcome) {
    const message = (outcome.body as { message?: unknown }).message;
    // A denial is an expected answer, not a bug: no stack trace (capturing one was ~10% of the server's
    // time per denied request in the `hot` benchmark).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(typeof message === 'string' ? message : 'Rate limit exceeded');
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'RateLimitError';
    this.statusCode = outcome.status;
    this.body = outcome.body!;
    this.decision = outcome.decision!;
  }
}

/*
 * Settings a route inherits from the plugin: where counts live and how answers look. Which requests count
 * (limits, name, identify, skip, cost, algorithm) is the route's own business.
 */
const INHERITED = ['redis', 'prefix', 'failure', 'timeoutMs', 'mode', 'onEvent', 'logger', 'clock', 'headers', 'statusCode', 'message', 'ipv6Subnet', 'warnings', 'user', 'hook'] as const;
const CORE_KEYS: readonly string[] = LIMITER_OPTION_KEYS;

function resolveHook(value: unknown, option: string): RateLimitHook {
  if (value === undefined) return 'onRequest';
  if ((HOOKS as readonly unknown[]).includes(value)) return value as RateLimitHook;
  throw new ConfigError(option, `must be one of ${HOOKS.join(', ')}; got ${describeValue(value)}`);
}

/** Default user: `request.user.id`, as @fastify/jwt, @fastify/passport and most auth plugins leave it. */
const defaultUser = (request: FastifyRequest): unknown => (request as { user?: { id?: unknown } }).user?.id;

/**
 * Fastify does not expose its `trustProxy` setting, so its effect is read off the request: the socket
 * address although X-Forwarded-For came means proxies are not trusted; the leftmost of several entries
 * (the one any client can write) means every hop is.
 */
function checkTrust(request: FastifyRequest, warn: HttpLimiter<FastifyRequest>['warn']): void {
  const xff = request.headers['x-forwarded-for'];
  if (typeof xff !== 'string' || (warned('trust-proxy-all') && warned('forwarded-header-untrusted'))) return;
  const entries = xff.split(',').map((s) => s.trim());
  if (request.ip === request.socket.remoteAddress && !entries.includes(request.ip)) {
    warn('forwarded-header-untrusted', "X-Forwarded-For arrived but Fastify's trustProxy does not trust the sender, so every client behind that proxy shares one limit; set trustProxy to your proxy count or addresses");
  } else if (entries.length > 1 && request.ip === entries[0]) {
    warn('trust-proxy-all', "Fastify's trustProxy took the leftmost X-Forwarded-For entry, which any client can choose; set trustProxy to the number of proxies or their addresses, not true");
  }
}

type Limiters = HttpLimiter<FastifyRequest>[];
type Done = (err?: Error) => void;

/** Fastify's route context of a request (internal: found by its symbol's description, once), or undefined. */
let contextSymbol: symbol | null | undefined;
function routeContext(request: FastifyRequest): object | undefined {
  contextSymbol ??= Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null;
  const context = contextSymbol === null ? undefined : (request as unknown as Record<symbol, unknown>)[contextSymbol];
  return typeof context === 'object' && context !== null ? context : undefined;
}

/**
 * Whether a denial thrown on this route would meet only Fastify's own error handler (no setErrorHandler, no
 * route errorHandler), no onError hook, and no response schema (the default handler would serialize with it).
 */
function plainErrorHandling(context: object, request: FastifyRequest): boolean {
  const { errorHandler, onError } = context as { errorHandler?: { func?: { name?: string } }; onError?: unknown };
  return onError === null && typeof errorHandler === 'object' && errorHandler !== null
    && Object.getPrototypeOf(errorHandler) === Object.prototype && errorHandler.func?.name === 'defaultErrorHandler'
    // No routeOptions (hidden by a hook, or another Fastify): whether a response schema applies is unknown.
    && typeof request.routeOptions === 'object' && request.routeOptions !== null
    && request.routeOptions.schema?.response === undefined;
}

/** Whether Fastify's default error handler would log nothing (it logs a 4xx at info level). */
function quietAtInfo(log: FastifyReply['log']): boolean {
  const { isLevelEnabled } = log as { isLevelEnabled?: unknown };
  if (typeof isLevelEnabled === 'function') return !(isLevelEnabled as (level: string) => boolean).call(log, 'info');
  // No logger configured: Fastify's abstract-logging stand-in, whose methods are all `noop`.
  return log.info.name === 'noop';
}

/**
 * One hook function running a route's limiters in order: synchronously (calling `done`) while their
 * outcomes are synchronous, as a client the block cache already denies is; else it returns a promise.
 *
 * A denial is thrown as a RateLimitError, so the app's error handler and onError hooks see it. When the
 * route has neither (and nothing would be logged), the thrown error would only reach Fastify's default
 * handler, which answers `errorBody` as JSON: the hook sends that same response itself and skips the error
 * machinery, the bulk of a denied request's cost. Detecting that reads Fastify internals; when they are not
 * as expected, denials are thrown.
 */
function hookFor(limiters: Limiters, denied: WeakMap<FastifyRequest, RateLimitError>) {
  let context: object | undefined;
  let plain = false;

  /** Applies one outcome: true to go on to the next limiter, false when the denial was sent; throws the rest. */
  function apply(outcome: HttpOutcome, request: FastifyRequest, reply: FastifyReply): boolean {
    if (outcome.action === 'error') throw outcome.error;
    if (outcome.decision !== undefined) request.rateLimit = outcome.decision;
    for (const [name, value] of outcome.set) reply.header(name, value);
    for (const [name, value] of outcome.append) {
      const before = reply.getHeader(name);
      reply.header(name, before === undefined ? value : `${String(before)}, ${value}`);
    }
    if (outcome.action === 'next') return true;
    const now = routeContext(request);
    if (now !== context) {
      context = now;
      plain = now !== undefined && plainErrorHandling(now, request);
    }
    // A status Node has no reason phrase for renders differently in Fastify's handler (no `error`): thrown.
    if (plain && STATUS_CODES[outcome.status] !== undefined && quietAtInfo(reply.log)) {
      reply.code(outcome.status).header('content-type', 'application/json; charset=utf-8').send(outcome.json ?? JSON.stringify(outcome.body));
      return false;
    }
    const error = new RateLimitError(outcome);
    denied.set(request, error);
    throw error;
  }

  function from(i: number, request: FastifyRequest, reply: FastifyReply, done: Done | undefined): Promise<void> | undefined {
    for (; i < limiters.length; i++) {
      const outcome = limiters[i]!.decide(request, request.ip, request.rateLimit);
      if (outcome instanceof Promise) {
        const at = i;
        return outcome.then((o) => (apply(o, request, reply) ? from(at + 1, request, reply, undefined) : undefined));
      }
      // Errors are rejected as the async hook threw them (a falsy throw value included).
      if (outcome.action === 'error') return Promise.reject(outcome.error);
      if (!apply(outcome, request, reply)) return undefined;
    }
    done?.();
    return undefined;
  }

  return function floodgate(request: FastifyRequest, reply: FastifyReply, done: Done): Promise<void> | undefined {
    checkTrust(request, limiters[0]!.warn);
    return from(0, request, reply, done);
  };
}

/** Adds `fn` to a route's hook without mutating the array Fastify's HEAD clone shares with the GET. */
function addHook(route: RouteOptions, hook: RateLimitHook, fn: ReturnType<typeof hookFor>): void {
  const existing = route[hook] as unknown;
  route[hook] = (existing === undefined ? [fn] : [...(Array.isArray(existing) ? existing : [existing]), fn]) as never;
}

async function floodgatePlugin(fastify: FastifyInstance, options: RateLimitPluginOptions): Promise<void> {
  assertKnownOptions(options, [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS, 'hook', 'global']);
  if (options.global !== undefined && typeof options.global !== 'boolean') throw new ConfigError('global', `must be true or false; got ${describeValue(options.global)}`);
  const hook = resolveHook(options.hook, 'hook');
  const limiterOptions: RouteRateLimitOptions = { ...options };
  delete (limiterOptions as RateLimitPluginOptions).global;
  delete limiterOptions.hook;
  const globalLimiter = options.global === false ? undefined : createHttpLimiter<FastifyRequest>(limiterOptions, [], defaultUser);
  // Limiters made here (not shared ones passed as `limiter`) free their name when the app closes.
  const owned: Limiter[] = globalLimiter !== undefined && options.limiter === undefined ? [globalLimiter.limiter] : [];
  fastify.addHook('onClose', async () => {
    await Promise.all(owned.map((l) => l.close()));
  });
  // Keyed by the config object: Fastify's automatic HEAD route carries its GET's config, so it finds the
  // GET's limiter here instead of creating a second one under the same name.
  const routeLimiters = new WeakMap<RouteRateLimitOptions, { hook: RateLimitHook; http: HttpLimiter<FastifyRequest> }>();
  const denied = new WeakMap<FastifyRequest, RateLimitError>();

  function routeLimiter(own: RouteRateLimitOptions): { hook: RateLimitHook; http: HttpLimiter<FastifyRequest> } {
    const cached = routeLimiters.get(own);
    if (cached !== undefined) return cached;
    const merged: Record<string, unknown> = {};
    for (const key of INHERITED) {
      if (options[key] !== undefined && !(own.limiter !== undefined && CORE_KEYS.includes(key) && key !== 'logger')) merged[key] = options[key];
    }
    Object.assign(merged, own);
    const { hook: routeHook, ...rest } = merged;
    const made = { hook: resolveHook(routeHook, 'config.rateLimit.hook'), http: createHttpLimiter<FastifyRequest>(rest, [], defaultUser) };
    routeLimiters.set(own, made);
    if (own.limiter === undefined) owned.push(made.http.limiter);
    return made;
  }

  fastify.addHook('onRoute', (route) => {
    const own: unknown = route.config?.rateLimit;
    if (own === false) return;
    if (own !== undefined && (typeof own !== 'object' || own === null)) {
      throw new ConfigError('config.rateLimit', `of ${route.method} ${route.url} must be an options object or false; got ${describeValue(own)}`);
    }
    const byHook = new Map<RateLimitHook, Limiters>();
    const add = (at: RateLimitHook, http: HttpLimiter<FastifyRequest>): void => void byHook.set(at, [...(byHook.get(at) ?? []), http]);
    if (globalLimiter !== undefined) add(hook, globalLimiter);
    const made = own === undefined ? undefined : routeLimiter(own as RouteRateLimitOptions);
    if (made !== undefined) add(made.hook, made.http);
    for (const [at, limiters] of byHook) addHook(route, at, hookFor(limiters, denied));
  });

  // With Fastify's own error handler a denial renders as { statusCode, error, message }, which is the
  // default body; a configured object body (message: {...}) is put back here, unless the app's handler
  // already shaped the response into something else.
  // Synchronous (callback) form: it runs on every response, and an async hook costs a promise each time.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    const error = denied.get(request);
    if (error === undefined || reply.statusCode !== error.statusCode || typeof payload !== 'string') return done(null, payload);
    const rendered = JSON.stringify(errorBody(error.statusCode, error.message));
    done(null, payload === rendered ? JSON.stringify(error.body) : payload);
  });
}

/** `await app.register(rateLimit, { redis, limits })`; per route `config: { rateLimit: {...} | false }`. */
export const rateLimit = fp(floodgatePlugin, { fastify: '5.x', name: '@floodgate/fastify' });
export default rateLimit;
export type { Decision, HeaderMode } from '@floodgate/core';
