import type { IncomingHttpHeaders, Server } from 'node:http';
import { Hono, type Context } from 'hono';
import { createAdaptorServer } from '@hono/node-server';
import { answerOf, beforeAnswer, serveHttp, sseWebStream, type AdapterFactory, type RoutePath } from '@floodgate/testing';
import { concurrency, rateLimit, slowDown, type ConcurrencyOptions, type RateLimitOptions, type SlowDownOptions } from '@floodgate/hono';

/** What the suite's option functions read: the request's headers, as Node's IncomingHttpHeaders has them. */
const views = new WeakMap<Context, { headers: IncomingHttpHeaders }>();
export function nodeView(c: Context): { headers: IncomingHttpHeaders } {
  let view = views.get(c);
  if (view === undefined) views.set(c, (view = { headers: Object.fromEntries(c.req.raw.headers) }));
  return view;
}

/**
 * A JSON answer. Not c.json(): Hono reads the headers object it builds with for...in, so under a polluted
 * Object.prototype (an attack of the suite) every c.json() throws, whatever the limiter decided.
 */
function json(c: Context, body: object, status = 200): Response {
  c.header('Content-Type', 'application/json');
  return c.body(JSON.stringify(body), status as 200);
}

/** Option functions that take the request first; `delayMs` takes it second. */
const REQUEST_FIRST = ['identify', 'user', 'skip', 'cost', 'plan', 'message', 'requestWasSuccessful', 'settle'];

/**
 * The suite's options for Hono: each function option the suite wrote (an own property: a polluted
 * prototype's stays where it is) sees `{ headers }` made from the Hono request; everything else, invalid
 * values included, is passed as given. `trustProxy` stands for a reverse proxy on this host.
 */
function forHono<R>(options: object, trustProxy: boolean | undefined): R {
  const out: Record<string, unknown> = { ...options };
  for (const key of REQUEST_FIRST) {
    const fn = out[key];
    if (Object.hasOwn(options, key) && typeof fn === 'function') out[key] = (c: Context, ...rest: unknown[]) => fn(nodeView(c), ...rest);
  }
  // A rule's limit as a function of the request (one rule or a list).
  const viewed = (rule: unknown): unknown => {
    const limit = (rule as { limit?: unknown } | null)?.limit;
    return typeof limit === 'function' ? { ...(rule as object), limit: (c: Context) => limit(nodeView(c)) } : rule;
  };
  if (Object.hasOwn(options, 'limits')) out.limits = Array.isArray(out.limits) ? out.limits.map(viewed) : viewed(out.limits);
  const delayMs = out.delayMs;
  if (Object.hasOwn(options, 'delayMs') && typeof delayMs === 'function')
    out.delayMs = (used: number, c: Context) => delayMs(used, nodeView(c));
  if (trustProxy) out.trustProxy = 'loopback';
  return out as R;
}

/**
 * The suite's app in Hono on @hono/node-server: an auth stand-in that sets `c.set('user', { id })` from
 * x-user, the suite's middlewares app-wide, and its routes, each with its own rateLimit when the spec
 * gives one. Errors are answered as Hono's default handler answers them, without printing each (the suite
 * provokes them on purpose).
 */
export const honoFactory: AdapterFactory = {
  name: 'hono',
  async makeApp(spec) {
    const app = new Hono<{ Variables: { user: { id: string } } }>();
    let hits = 0;
    app.onError((_err, c) => c.body('Internal Server Error', 500));
    app.use(async (c, next) => {
      const id = c.req.header('x-user');
      if (id !== undefined) c.set('user', { id });
      await next();
    });
    if (spec.concurrency) app.use(concurrency(forHono<ConcurrencyOptions>(spec.concurrency, spec.trustProxy)));
    const global = spec.global && rateLimit(forHono<RateLimitOptions>(spec.global, spec.trustProxy));
    if (global && spec.rateLimitFirst) app.use(global);
    if (spec.slowDown) app.use(slowDown(forHono<SlowDownOptions>(spec.slowDown, spec.trustProxy)));
    if (global && !spec.rateLimitFirst) app.use(global);
    app.get('/slow', async (c) => {
      hits++;
      await spec.slow?.();
      return json(c, { ok: true });
    });
    app.get('/stream', (c) => {
      hits++;
      c.header('Content-Type', 'text/event-stream');
      return c.body(sseWebStream(nodeView(c).headers, spec.stream));
    });
    const routes: [RoutePath, 'get' | 'post'][] = [
      ['/', 'get'],
      ['/search', 'get'],
      ['/login', 'post'],
    ];
    for (const [path, method] of routes) {
      const own = spec.routes?.[path];
      const handler = async (c: Context): Promise<Response> => {
        hits++;
        const { status } = answerOf(nodeView(c).headers);
        await beforeAnswer(nodeView(c).headers, spec);
        return json(c, { ok: status < 400 }, status);
      };
      if (own) app[method](path, rateLimit(forHono<RateLimitOptions>(own, spec.trustProxy)), handler);
      else app[method](path, handler);
    }
    const server = createAdaptorServer({ fetch: app.fetch }) as Server;
    const served = await serveHttp(spec.socketPath ? server.listen(spec.socketPath) : server.listen(0, '127.0.0.1'));
    return { ...served, hits: () => hits };
  },
};
