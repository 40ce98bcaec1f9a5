import { STATUS_CODES } from 'node:http';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import {
  checkProxyTrust,
  whenResponseDone,
  type Decision,
  type HttpLimiter,
  type HttpOutcome,
  type TrustSetting,
} from '@floodgate/core/adapter';
import { defaultErrorHandler, plainErrorHandling, quietAtInfo, routeContext } from './internals';

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

export type Limiters = HttpLimiter<FastifyRequest>[];
type Done = (err?: Error) => void;
/** Denials thrown to Fastify's default error handler, whose rendering the plugin's onSend puts the body back into. */
export type Thrown = WeakMap<FastifyRequest, RateLimitError>;

const SETTING: TrustSetting = { name: "Fastify's trustProxy", fix: 'set trustProxy to the number of proxies or their addresses, not true' };

/** Fastify does not expose its `trustProxy` setting: core reads its effect off `request.ip` and the socket's address. */
export function checkTrust(request: FastifyRequest, warn: HttpLimiter<FastifyRequest>['warn']): void {
  checkProxyTrust(warn, SETTING, () => {
    const xff = request.headers['x-forwarded-for'];
    // Without the header there is nothing to check: request.ip (a getter, which the hook reads too) is not read.
    if (typeof xff !== 'string') return { forwarded: undefined };
    return { forwarded: xff, ip: request.ip, peer: request.socket.remoteAddress };
  });
}

/**
 * One hook function running a route's limiters in order: synchronously (calling `done`) while their
 * outcomes are synchronous, as a client the block cache already denies is; else it returns a promise.
 * A denial is thrown as a RateLimitError, so the app's error handler and onError hooks see it; when only
 * Fastify's default handler would (internals.ts), the hook sends that same response itself.
 */
export function hookFor(limiters: Limiters, thrown: Thrown) {
  let context: object | undefined;
  let plain = false;
  let restore = false;

  /** Applies one outcome: true to go on to the next limiter, false when the denial was sent; throws the rest. */
  function apply(outcome: HttpOutcome, request: FastifyRequest, reply: FastifyReply, http: HttpLimiter<FastifyRequest>): boolean {
    if (outcome.action === 'error') throw outcome.error;
    const own = outcome.own;
    if (own !== undefined)
      whenResponseDone(reply.raw, (finished) => http.completed(outcome, finished, reply.raw.statusCode, [request, reply]));
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
      restore = now !== undefined && defaultErrorHandler(now);
    }
    // A status Node has no reason phrase for renders differently in Fastify's handler (no `error`): thrown.
    if (plain && STATUS_CODES[outcome.status] !== undefined && quietAtInfo(reply.log)) {
      reply
        .code(outcome.status)
        .header('content-type', 'application/json; charset=utf-8')
        .send(outcome.json ?? JSON.stringify(outcome.body));
      return false;
    }
    const error = new RateLimitError(outcome);
    // Only Fastify's default handler renders it as { statusCode, error, message }; an app's own handler decides.
    if (restore) thrown.set(request, error);
    throw error;
  }

  function from(i: number, request: FastifyRequest, reply: FastifyReply, done: Done | undefined): Promise<void> | undefined {
    for (; i < limiters.length; i++) {
      const outcome = limiters[i]!.decide(request, request.ip, request.rateLimit);
      if (outcome instanceof Promise) {
        const at = i;
        return outcome.then((o) => (apply(o, request, reply, limiters[at]!) ? from(at + 1, request, reply, undefined) : undefined));
      }
      // Errors are rejected as the async hook threw them (a falsy throw value included).
      if (outcome.action === 'error') return Promise.reject(outcome.error);
      if (!apply(outcome, request, reply, limiters[i]!)) return undefined;
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
export function addHook(route: RouteOptions, hook: 'onRequest' | 'preValidation' | 'preHandler', fn: ReturnType<typeof hookFor>): void {
  const existing = route[hook] as unknown;
  route[hook] = (existing === undefined ? [fn] : [...(Array.isArray(existing) ? existing : [existing]), fn]) as never;
}
