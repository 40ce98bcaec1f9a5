/**
 * `rateLimit(options)`: Floodgate rate limiting for tRPC 11 procedures (docs/trpc.md).
 *
 * @module @floodgate/trpc
 */
import type { TRPCMiddlewareFunction, TRPCProcedureType } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import {
  ConfigError,
  createHttpLimiter,
  describeValue,
  ownOptions,
  webClientAddress,
  type Decision,
  type HttpOptions,
  type Limiter,
  type LimitsOrLimiter,
  type TrustProxyOption,
} from '@floodgate/core/adapter';
import { checkRefusalStatus, refusal } from './errors';
import { recordOf } from './response-record';

/**
 * One call of a procedure, as the middleware and every option function see it: tRPC's middleware options
 * (`ctx`, `path`, `type`, `meta`, `input`...). `identify: ({ ctx }) => ctx.apiKey`, `cost: ({ meta }) => meta?.cost ?? 1`.
 */
export interface ProcedureCall<TContext = Record<string, unknown>, TMeta = unknown> {
  ctx: TContext;
  type: TRPCProcedureType;
  /** The procedure's path, such as `post.byId`. */
  path: string;
  /** The input as the validators before this middleware left it (the middleware goes first: undefined). */
  input: unknown;
  getRawInput: () => Promise<unknown>;
  meta: TMeta | undefined;
  signal: AbortSignal | undefined;
}

/** Every option, each optional (`RateLimitOptions` requires `limits` or `limiter`). */
export interface RateLimitBaseOptions<TContext = Record<string, unknown>, TMeta = unknown> extends HttpOptions<
  ProcedureCall<TContext, TMeta>
> {
  /**
   * The client's address, the default `ip:` identifier. Default: `ctx.clientAddress`, which
   * rateLimitContext(req) puts on the context.
   */
  clientAddress?: (call: ProcedureCall<TContext, TMeta>) => string | undefined;
  /**
   * The proxies in front of the server whose X-Forwarded-For is believed: addresses and CIDR ranges
   * (`'10.0.0.0/8'`), `'loopback'`, `'linklocal'`, `'uniquelocal'`, or the number of proxy hops (`1`: the one
   * proxy in front, a platform's, appended the client). Default: none, so the header never changes who is
   * counted. Not for an Express app: its `trust proxy` already decided `req.ip`.
   */
  trustProxy?: TrustProxyOption;
}

/** `rateLimit()`'s options: `limits` (with any core option), or a shared `limiter`. */
export type RateLimitOptions<TContext = Record<string, unknown>, TMeta = unknown> = LimitsOrLimiter<RateLimitBaseOptions<TContext, TMeta>>;

/** What the middleware adds to the context of the procedures after it. */
export interface RateLimitContextOut {
  /** The tightest decision of the limiters that ran on this call; undefined when skipped. */
  rateLimit: Decision | undefined;
}

/** What the middleware answers: tRPC's middleware result, which carries `rateLimit` into the context after it. */
type MiddlewareResult = Awaited<ReturnType<TRPCMiddlewareFunction<object, unknown, object, RateLimitContextOut, unknown>>>;

/** tRPC's middleware options: the call, its index in its batch (0 when not batched), and `next`. */
type MiddlewareOptions<TContext, TMeta> = ProcedureCall<TContext, TMeta> & {
  batchIndex?: number;
  next(opts: { ctx: RateLimitContextOut }): Promise<MiddlewareResult>;
};

/** The middleware, with the limiter it checks and a way to close it. */
export interface RateLimitMiddleware<TContext = Record<string, unknown>, TMeta = unknown> {
  (opts: MiddlewareOptions<TContext, TMeta>): Promise<MiddlewareResult>;
  /** The limiter this middleware checks: its own, or the shared `limiter` it was given. */
  readonly limiter: Limiter;
  /** Closes the limiter this middleware created, which frees its name; a shared `limiter` passed in stays open. */
  close(): Promise<void>;
}

/** Default user: `ctx.user.id`, where an authentication step of createContext or a middleware leaves it. */
const defaultUser = (call: ProcedureCall<unknown>): unknown => (call.ctx as { user?: { id?: unknown } } | undefined)?.user?.id;
/** What rateLimitContext() left on the context: the address the server resolved, X-Forwarded-For if it did not. */
const fromContext = (call: ProcedureCall<unknown>): [string | undefined, string | undefined] => {
  const ctx = call.ctx as { clientAddress?: unknown; forwardedFor?: unknown } | undefined;
  const { clientAddress, forwardedFor } = ctx ?? {};
  return [typeof clientAddress === 'string' ? clientAddress : undefined, typeof forwardedFor === 'string' ? forwardedFor : undefined];
};

/**
 * A tRPC middleware: `t.procedure.use(rateLimit({ limiter }))`. Each call is one check (a batch of N calls
 * is N checks, each its own cost, sent to Redis together: one script call for up to 1,000); a refused call
 * throws TRPCError TOO_MANY_REQUESTS and fails alone.
 */
export function rateLimit<TContext = Record<string, unknown>, TMeta = unknown>(
  options: RateLimitOptions<TContext, TMeta>,
): RateLimitMiddleware<TContext, TMeta> {
  const own = ownOptions(options as RateLimitBaseOptions<TContext, TMeta>);
  checkRefusalStatus('statusCode', own.statusCode);
  checkRefusalStatus('denyStatusCode', own.denyStatusCode);
  if (own.clientAddress !== undefined && typeof own.clientAddress !== 'function') {
    throw new ConfigError('clientAddress', `must be a function (call) => string | undefined; got ${describeValue(own.clientAddress)}`);
  }
  if (own.clientAddress !== undefined && own.trustProxy !== undefined) {
    throw new ConfigError('trustProxy', 'cannot stand beside clientAddress, which decides the address itself');
  }
  // Validated before the limiter is made, so a ConfigError keeps no name taken.
  const trusted = webClientAddress(own.trustProxy);
  const http = createHttpLimiter<ProcedureCall<TContext, TMeta>>(options, ['clientAddress', 'trustProxy'], defaultUser);
  const behindProxies = trusted(http.warn);
  const addressOf =
    own.clientAddress ?? ((call: ProcedureCall<TContext, TMeta>): string | undefined => behindProxies(...fromContext(call)));

  const middleware = async (opts: MiddlewareOptions<TContext, TMeta>): Promise<MiddlewareResult> => {
    // A batch's calls start in one turn: each asks that their checks go to Redis in one script call (up to
    // 1,000 a call), at the end of the turn, rather than in calls of 16 or the first alone when the store is
    // idle. Every call asks, the first too: its index (0) does not say whether a batch follows it.
    http.keepWhole();
    const previous = (opts.ctx as Partial<RateLimitContextOut> | undefined)?.rateLimit;
    const pending = http.decide(opts, addressOf(opts), previous);
    const outcome = pending instanceof Promise ? await pending : pending;
    if (outcome.action === 'error') throw outcome.error;
    const record = recordOf(opts.ctx);
    if (outcome.decision !== undefined && record !== undefined) record.note(http, outcome.decision, outcome.set, outcome.append);
    if (outcome.action === 'deny') throw refusal(outcome);
    const result = await opts.next({ ctx: { rateLimit: outcome.decision ?? previous } });
    // Refunds and settle: the call is over once its procedure returned (a subscription: once its stream began).
    // `settle(call, result)` and `requestWasSuccessful(call, result)` read what the procedure answered. A call
    // whose client left first (its signal aborted: the connection closed before the answer) was never
    // answered, and is never judged: it stays counted, whatever its procedure returned (docs/security.md,
    // "Refunds bought by resetting the connection"); a settle still settles it.
    if (outcome.own !== undefined) {
      const answered = opts.signal?.aborted !== true;
      http.completed(outcome, answered, result.ok ? 200 : getHTTPStatusCodeFromError(result.error), [opts, result]);
    }
    return result;
  };
  const owned = own.limiter === undefined;
  return Object.assign(middleware, { limiter: http.limiter, close: async () => (owned ? http.limiter.close() : undefined) });
}

export type { Decision, HeaderMode } from '@floodgate/core/adapter';
export { rateLimitContext, type RateLimitContext, type FetchContextOptions, type FetchRequest, type NodeRequest } from './context';
export { rateLimitHeaders, rateLimitResponseMeta, type ResponseRecord } from './response-record';
export { RateLimitExceededError, rateLimitErrorData, rateLimitErrorFormatter, type RateLimitErrorData } from './errors';
