import { createServer, type IncomingHttpHeaders } from 'node:http';
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { answerOf, beforeAnswer, serveHttp, type AdapterFactory, type DenialBody, type RoutePath } from '@floodgate/testing';
import {
  rateLimit,
  rateLimitContext,
  rateLimitErrorFormatter,
  rateLimitResponseMeta,
  type ProcedureCall,
  type RateLimitContext,
  type RateLimitOptions,
} from '@floodgate/trpc';

/*
 * The shared suites' app (packages/testing/src/conformance.ts, AppSpec) as a real tRPC 11 server: the
 * standalone adapter's handler on a real http.Server, rateLimitContext(req) for the address and the
 * response's headers, rateLimitResponseMeta writing them, rateLimitErrorFormatter on the errors. The spec's
 * `global` limiter is a middleware on every procedure, a route's own limiter a middleware of its procedure.
 *
 * The suites speak REST (GET /, GET /search, POST /login, GET /slow); tRPC names procedures. The server maps
 * each path to its procedure's path before tRPC's handler sees the request (`/` is procedure `root`; the
 * others keep their names), and gives a body-less POST the content type tRPC's own client sends
 * (application/json): every request still goes through tRPC's handler, context, middlewares and procedure.
 * A handler's `x-status` of 400 or more is a TRPCError whose code tRPC answers with that status.
 */

/** The context of a call: rateLimitContext's part, the request's headers (what the suites' option functions read), the user. */
interface Context extends RateLimitContext {
  headers: IncomingHttpHeaders;
  user?: { id: string };
}

/** tRPC's error code for each HTTP status it answers an error with (the first code of each status). */
const CODE_OF_STATUS = new Map<number, keyof typeof TRPC_ERROR_CODES_BY_KEY>();
for (const code of Object.keys(TRPC_ERROR_CODES_BY_KEY) as (keyof typeof TRPC_ERROR_CODES_BY_KEY)[]) {
  const status = getHTTPStatusCodeFromError(new TRPCError({ code }));
  if (!CODE_OF_STATUS.has(status)) CODE_OF_STATUS.set(status, code);
}

/** The error a procedure throws to answer `status`; a status tRPC has no code for is the test's mistake. */
function errorFor(status: number): TRPCError {
  const code = CODE_OF_STATUS.get(status);
  if (code === undefined) throw new Error(`tRPC has no error code answered with HTTP ${status}`);
  return new TRPCError({ code, message: `status ${status}` });
}

/** Option functions that take the request (here: the call) first. */
const CALL_FIRST = ['identify', 'user', 'skip', 'cost', 'plan', 'message', 'requestWasSuccessful', 'settle'];
/** What the suites' option functions read of a call: its request's headers. */
const viewOf = (call: ProcedureCall<Context>): { headers: IncomingHttpHeaders } => ({ headers: call.ctx.headers });

/**
 * The suite's options for tRPC: each function option the suite wrote (an own property: a polluted
 * prototype's stays where it is) sees `{ headers }` of the call's request; everything else, invalid values
 * included, is passed as given. `trustProxy` stands for a reverse proxy on this host.
 */
function forTrpc(options: object, trustProxy: boolean | undefined): RateLimitOptions<Context> {
  const out: Record<string, unknown> = { ...options };
  for (const key of CALL_FIRST) {
    const fn = out[key];
    if (Object.hasOwn(options, key) && typeof fn === 'function')
      out[key] = (call: ProcedureCall<Context>, ...rest: unknown[]) => (fn as (...a: unknown[]) => unknown)(viewOf(call), ...rest);
  }
  const viewed = (rule: unknown): unknown => {
    const limit = (rule as { limit?: unknown } | null)?.limit;
    return typeof limit === 'function'
      ? { ...(rule as object), limit: (call: ProcedureCall<Context>) => (limit as (r: unknown) => unknown)(viewOf(call)) }
      : rule;
  };
  if (Object.hasOwn(options, 'limits')) out.limits = Array.isArray(out.limits) ? out.limits.map(viewed) : viewed(out.limits);
  if (trustProxy) out.trustProxy = 'loopback';
  return out as unknown as RateLimitOptions<Context>;
}

/** The procedure each of the suites' paths is served by. */
const PROCEDURE_OF: Record<string, string> = { '/': 'root', '/search': 'search', '/login': 'login', '/slow': 'slow' };

/**
 * How tRPC frames a refusal (docs/trpc.md): its error shape, the JSON-RPC code of TOO_MANY_REQUESTS,
 * FORBIDDEN or SERVICE_UNAVAILABLE, the HTTP status in `data`, the message of Floodgate's body (a string
 * `message`; else tRPC's default), and rateLimitErrorFormatter's wait. No `error` text beside the code.
 */
function trpcDenialBody(body: DenialBody, status: number): unknown {
  const code = CODE_OF_STATUS.get(status)!;
  // A string, or a matcher of one (expect.stringContaining); an object body has none, and tRPC says its default.
  const given = body.message as { asymmetricMatch?: unknown } | string | undefined;
  const message = typeof given === 'string' || typeof given?.asymmetricMatch === 'function' ? given : 'Rate limit exceeded';
  return {
    error: {
      message,
      code: TRPC_ERROR_CODES_BY_KEY[code],
      data: {
        code,
        httpStatus: status,
        path: expect.any(String),
        rateLimit: { retryAfterMs: expect.any(Number), retryAfter: expect.any(Number) },
      },
    },
  };
}

export const trpcFactory: AdapterFactory = {
  name: 'trpc',
  /*
   * Not in this package: concurrency() and slowDown(); a stream settled when it ends (a subscription's call is
   * over once its stream began, and a refused one is an error event of a 200 stream). Not in tRPC: serving
   * under a polluted Object.prototype (its Node adapter's Fetch Request throws on `mode`); trpc.test.ts checks
   * the middleware reads its options as own properties there. A refusal's status: one tRPC has an error code
   * for (403, 429, 503; another is a ConfigError).
   */
  capabilities: { concurrency: false, slowDown: false, stream: false, servesPollutedPrototype: false, anyRefusalStatus: false },
  denialBody: trpcDenialBody,
  async makeApp(spec) {
    // isDev false, as a production server: an error's shape carries no stack.
    const t = initTRPC.context<Context>().create({ errorFormatter: rateLimitErrorFormatter, isDev: false });
    let hits = 0;
    const global = spec.global && rateLimit<Context>(forTrpc(spec.global, spec.trustProxy));
    const procedure = global ? t.procedure.use(global) : t.procedure;
    const own = (path: RoutePath) => {
      const options = spec.routes?.[path];
      return options ? procedure.use(rateLimit<Context>(forTrpc(options, spec.trustProxy))) : procedure;
    };
    const answer = async ({ ctx }: { ctx: Context }): Promise<{ ok: true }> => {
      hits++;
      const { status } = answerOf(ctx.headers);
      await beforeAnswer(ctx.headers, spec);
      if (status >= 400) throw errorFor(status);
      return { ok: true };
    };
    const router = t.router({
      root: own('/').query(answer),
      search: own('/search').query(answer),
      login: own('/login').mutation(answer),
      slow: procedure.query(async () => {
        hits++;
        await spec.slow?.();
        return { ok: true };
      }),
    });
    const handler = createHTTPHandler({
      router,
      createContext: ({ req }): Context => {
        const id = req.headers['x-user'];
        return { ...rateLimitContext(req), headers: req.headers, ...(typeof id === 'string' ? { user: { id } } : {}) };
      },
      responseMeta: rateLimitResponseMeta,
      // The suites provoke errors on purpose: tRPC's default prints none.
      onError: () => undefined,
    });
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const path = PROCEDURE_OF[url.pathname];
      if (path !== undefined) req.url = `/${path}${url.search}`;
      if (req.method === 'POST' && req.headers['content-type'] === undefined) req.headers['content-type'] = 'application/json';
      handler(req, res);
    });
    const served = await serveHttp(spec.socketPath ? server.listen(spec.socketPath) : server.listen(0, '127.0.0.1'));
    return { ...served, hits: () => hits };
  },
};
