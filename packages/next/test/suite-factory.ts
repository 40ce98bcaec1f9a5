// First: the global Next's modules expect from `next start`.
import './next-environment';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { NextRequest } from 'next/server.js';
import { answerOf, beforeAnswer, serveHttp, sseWebStream, type AdapterFactory, type AppSpec, type RoutePath } from '@floodgate/testing';
import {
  rateLimit,
  routeRateLimit,
  type ProxyRateLimit,
  type ProxyRateLimitOptions,
  type RouteHandler,
  type RouteRateLimitOptions,
} from '@floodgate/next';
import { nextHandler } from './suite-server';

/*
 * The shared suites' app (packages/testing/src/conformance.ts, AppSpec) in a real Next.js 16 server: the
 * built app of test/suite-app, served in this process by Next's production request handler (suite-server.ts)
 * on a real http.Server per app. Next runs its proxy.js and its route handler (app/[[...path]]/route.js) for
 * every request; they answer with what this factory set for the app the request reached, in a globalThis
 * slot: the app's server writes its id into a request header of its own (a client's is overwritten), as
 * @floodgate/next writes the peer.
 *
 * - `global` is the proxy's `rateLimit()` (proxy.ts), the app-wide limit of docs/next.md; when it judges
 *   the response (skipSuccessfulRequests, skipFailedRequests, requestWasSuccessful, settle), which a proxy
 *   never sees, it is a `routeRateLimit()` around every route handler instead.
 * - a route's own limiter is a `routeRateLimit()` around its handler, after the proxy's.
 * - the auth stand-in: the user is the x-user header (the option `user`, as an app reads its session).
 * - option functions see `{ headers }` of the NextRequest, as Node's IncomingHttpHeaders has them.
 */

const SLOT = Symbol.for('floodgate.next.suite');
const APP_HEADER = 'x-floodgate-suite-app';

interface SuiteApp {
  proxy(request: NextRequest): Promise<Response> | Response;
  route(request: NextRequest, context: unknown): Promise<Response>;
}
const apps = new Map<string, SuiteApp>();
let next = 0;

/** The app a request reached (its server's id, written on the request). */
function appOf(request: NextRequest): SuiteApp {
  const app = apps.get(request.headers.get(APP_HEADER) ?? '');
  if (app === undefined) throw new Error(`no suite app ${request.headers.get(APP_HEADER)}`);
  return app;
}
(globalThis as { [SLOT]?: SuiteApp })[SLOT] = {
  proxy: (request) => appOf(request).proxy(request),
  route: (request, context) => appOf(request).route(request, context),
};

/** What the suites' option functions read: the request's headers, as Node's IncomingHttpHeaders has them. */
const views = new WeakMap<Request, { headers: IncomingHttpHeaders }>();
function viewOf(request: Request): { headers: IncomingHttpHeaders } {
  let view = views.get(request);
  if (view === undefined) views.set(request, (view = { headers: Object.fromEntries(request.headers) }));
  return view;
}

/** Option functions that take the request first; `delayMs` has no place here (no slowDown in this package). */
const REQUEST_FIRST = ['identify', 'user', 'skip', 'cost', 'plan', 'message', 'requestWasSuccessful', 'settle'];
/** The options that need the response: a proxy refuses them (it never sees one). */
const RESPONSE_OPTIONS = ['skipSuccessfulRequests', 'skipFailedRequests', 'requestWasSuccessful', 'settle'];

/**
 * The suite's options for @floodgate/next: each function option the suite wrote (an own property: a polluted
 * prototype's stays where it is) sees `{ headers }`; everything else, invalid values included, as given.
 */
function forNext<R>(options: object, trustProxy: boolean | undefined): R {
  const out: Record<string, unknown> = { ...options };
  for (const key of REQUEST_FIRST) {
    const fn = out[key];
    if (Object.hasOwn(options, key) && typeof fn === 'function')
      out[key] = (request: Request, ...rest: unknown[]) => (fn as (...a: unknown[]) => unknown)(viewOf(request), ...rest);
  }
  const viewed = (rule: unknown): unknown => {
    const limit = (rule as { limit?: unknown } | null)?.limit;
    return typeof limit === 'function'
      ? { ...(rule as object), limit: (request: Request) => (limit as (r: unknown) => unknown)(viewOf(request)) }
      : rule;
  };
  if (Object.hasOwn(options, 'limits')) out.limits = Array.isArray(out.limits) ? out.limits.map(viewed) : viewed(out.limits);
  // The auth stand-in: the signed-in user is the x-user header.
  if (!Object.hasOwn(options, 'user')) out.user = (request: Request) => request.headers.get('x-user') ?? undefined;
  if (trustProxy) out.trustProxy = 'loopback';
  return out as R;
}

const json = (body: object, status = 200): Response => Response.json(body, { status });

/** The app's routes (`global` a route limit when it judges the response), each wrapped by its own limit. */
function routesOf(spec: AppSpec, counted: () => void, closers: (() => Promise<void>)[]): SuiteApp['route'] {
  const limit = (options: object): ((handler: RouteHandler<unknown>) => RouteHandler<unknown>) => {
    const made = routeRateLimit(forNext<RouteRateLimitOptions>(options, spec.trustProxy));
    closers.push(() => made.close());
    return made;
  };
  const global = spec.global && RESPONSE_OPTIONS.some((key) => Object.hasOwn(spec.global!, key)) ? limit(spec.global) : undefined;
  const answer: RouteHandler<unknown> = async (request) => {
    counted();
    const { headers } = viewOf(request);
    const { status } = answerOf(headers);
    await beforeAnswer(headers, spec);
    return json({ ok: status < 400 }, status);
  };
  const routes = new Map<string, RouteHandler<unknown>>([
    [
      'GET /slow',
      async () => {
        counted();
        await spec.slow?.();
        return json({ ok: true });
      },
    ],
    [
      'GET /stream',
      (request) => {
        counted();
        return new Response(sseWebStream(viewOf(request).headers, spec.stream), { headers: { 'Content-Type': 'text/event-stream' } });
      },
    ],
  ]);
  const paths: [RoutePath, 'GET' | 'POST'][] = [
    ['/', 'GET'],
    ['/search', 'GET'],
    ['/login', 'POST'],
  ];
  for (const [path, method] of paths) {
    const own = spec.routes?.[path];
    routes.set(`${method} ${path}`, own ? limit(own)(answer) : answer);
  }
  if (global !== undefined) for (const [key, handler] of routes) routes.set(key, global(handler));
  return async (request, context) => {
    const handler = routes.get(`${request.method} ${request.nextUrl.pathname}`);
    return handler === undefined ? json({ ok: false }, 404) : handler(request, context);
  };
}

// Built (or found built) and started once per test file, before its first test; closed after its last.
beforeAll(() => nextHandler(), 900_000);
afterAll(async () => (await nextHandler()).close());

export const nextFactory: AdapterFactory = {
  name: 'next',
  /*
   * Not in @floodgate/next: concurrency() and slowDown(). Not in Next: serving under a polluted
   * Object.prototype (it builds a Fetch Request, whose constructor reads `mode` off the prototype and throws;
   * next.test.ts checks the limiters there), and a route handler's RateLimit headers beside the proxy's (the
   * proxy's win).
   */
  capabilities: { concurrency: false, slowDown: false, servesPollutedPrototype: false, routeHeadersBesideGlobal: false },
  async makeApp(spec) {
    const { handle } = await nextHandler();
    let hits = 0;
    const closers: (() => Promise<void>)[] = [];
    let route: SuiteApp['route'];
    let proxy: ProxyRateLimit | undefined;
    try {
      route = routesOf(spec, () => void hits++, closers);
      if (spec.global && !RESPONSE_OPTIONS.some((key) => Object.hasOwn(spec.global!, key))) {
        proxy = rateLimit(forNext<ProxyRateLimitOptions>(spec.global, spec.trustProxy));
        closers.push(() => proxy!.close());
      }
    } catch (error) {
      // A ConfigError: the limiters made before it free their names.
      await Promise.all(closers.map((close) => close()));
      throw error;
    }
    const { NextResponse } = await import('next/server.js');
    const id = String(++next);
    apps.set(id, { proxy: (request) => (proxy ? proxy(request) : NextResponse.next()), route });
    const server = createServer((req, res) => {
      req.headers[APP_HEADER] = id;
      void handle(req, res);
    });
    const served = await serveHttp(spec.socketPath ? server.listen(spec.socketPath) : server.listen(0, '127.0.0.1'));
    return {
      ...served,
      hits: () => hits,
      close: async () => {
        await served.close();
        apps.delete(id);
        await Promise.all(closers.map((close) => close()));
      },
    };
  },
};
