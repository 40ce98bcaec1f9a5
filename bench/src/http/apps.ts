import { createServer, type RequestListener, type Server } from 'node:http';
import { join } from 'node:path';
import type Redis from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { HEADERS_OFF, clientOf, floodgateLimits, type Budget, type Shape } from './shapes';

/** Starts the app on 127.0.0.1:port. */
export type Listen = (port: number) => Promise<void>;
/** Builds one variant's app for a shape, with the Redis client it may use; `variant` is its name. */
export type AppFactory = (shape: Shape, redis: Redis, variant: string) => Listen | Promise<Listen>;

/**
 * `server` listening on 127.0.0.1:port, or the listen's error (the port taken since it was picked: server.ts
 * exits with LISTEN_FAILED, and servers.ts starts the process again on other ports). An error left to the
 * 'error' event would be uncaught, which Next.js's server logs and carries on from: the process would never
 * listen nor exit.
 */
export function listenOn(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** A plain Node server around a request listener (Express apps, Koa's callback()). */
export function serve(listener: RequestListener): Listen {
  const server = createServer(listener);
  server.keepAliveTimeout = 60_000;
  return (port) => listenOn(server, port);
}

/**
 * An adapter package for a Floodgate variant: this build's, or (`floodgate@before`) the one snapshotted in
 * BENCH_BEFORE by bench/scripts/snapshot-before.sh (`floodgate@<build>`: BENCH_BUILDS/<build>), for an A/B
 * interleaved in one run.
 */
export function adapter<T>(
  variant: string,
  pkg: '@floodgate/express' | '@floodgate/fastify' | '@floodgate/koa' | '@floodgate/hono' | '@floodgate/nestjs',
  current: T,
): T {
  const at = variant.indexOf('@');
  if (at < 0) return current;
  const build = variant.slice(at + 1);
  const dir = build === 'before' ? process.env.BENCH_BEFORE : process.env.BENCH_BUILDS && join(process.env.BENCH_BUILDS, build);
  if (!dir) throw new Error(`${variant} needs ${build === 'before' ? 'BENCH_BEFORE' : 'BENCH_BUILDS'} (bench/scripts/snapshot-before.sh)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(join(dir, 'node_modules', pkg)) as T;
}

/** A budget's cost per unit: 1 request, and `tokens` of its unit. */
const budgetCost = (b: Budget, tokens: number): Record<string, number> => ({ requests: 1, [b.unit]: tokens });

/**
 * Floodgate's options for a shape and variant: `floodgate:<algorithm>` picks the algorithm;
 * `floodgate:headers-off` sends no RateLimit headers (`headers: false`), as rate-limiter-flexible's README
 * middleware sends none: the same HTTP work as that peer. A shape with a budget (settle) counts each
 * request at its estimate (`cost`) and settles it at the actual cost once the response is over (`settle`,
 * whose first argument is the request, or the context, on every adapter).
 */
export function floodgateOptions<Req>(
  shape: Shape,
  redis: Redis,
  variant: string,
  headers: (req: Req) => Record<string, string | string[] | undefined>,
) {
  const spec = variant.startsWith('floodgate:') ? variant.slice('floodgate:'.length) : undefined;
  const algorithm = spec === HEADERS_OFF ? undefined : spec;
  return {
    redis,
    name: `bench-${shape.name}-${variant.replace(/[^a-z0-9-]/gi, '_')}`,
    limits: floodgateLimits(shape),
    ...(algorithm === undefined ? {} : { algorithm: algorithm as 'fixed-window' }),
    ...(spec === HEADERS_OFF ? { headers: false as const } : {}),
    identify: (req: Req) => shape.identifiers(clientOf(headers(req))),
    ...(shape.budget === undefined ? {} : budgetOptions(shape.budget, (req: Req) => clientOf(headers(req)))),
  };
}

function budgetOptions<Req>(b: Budget, clientOfReq: (req: Req) => string) {
  return { cost: budgetCost(b, b.estimate), settle: (req: Req) => budgetCost(b, b.actual(clientOfReq(req))) };
}

/** A settle that failed: said on stderr, once (a bench run fails no settle; Floodgate's `settle-failed` warning repeats once a minute). */
let rewardFailed = false;
const onRewardFailed = (err: unknown): void => {
  if (!rewardFailed) process.stderr.write(`rate-limiter-flexible reward failed: ${String(err)}\n`);
  rewardFailed = true;
};

/**
 * rate-limiter-flexible doing the settle shape's work, what a user of it writes for a cost known only after
 * the response: a RateLimiterRedis per rule on the client id, all consumed before the handler (1 request,
 * the estimate in tokens), then, once the response is over, the tokens limiter rewarded what the estimate
 * overshot. `consume` rejects as the limiters do (a RateLimiterRes when denied, an Error when Redis fails);
 * `settle` is not awaited, as Floodgate's settle delays no response. The frameworks wire them as their
 * middleware or hooks.
 */
export function rlfSettle(shape: Shape, redis: Redis): { consume(client: string): Promise<unknown>; settle(client: string): void } {
  const b = shape.budget;
  if (b === undefined) throw new Error(`rate-limiter-flexible's settle middleware needs a shape with a budget, not ${shape.name}`);
  const limiters = shape.peers.map((r, i) => ({
    id: r.id,
    metered: r.unit === b.unit,
    limiter: new RateLimiterRedis({ storeClient: redis, keyPrefix: `rlfs${i}`, points: r.limit, duration: r.windowMs / 1000 }),
  }));
  return {
    consume: (c) => Promise.all(limiters.map((l) => l.limiter.consume(l.id(c), l.metered ? b.estimate : 1))),
    settle: (c) => {
      const back = b.estimate - b.actual(c);
      for (const l of limiters) if (l.metered && back > 0) l.limiter.reward(l.id(c), back).then(undefined, onRewardFailed);
    },
  };
}

/** The hot shape's denial written by hand (no limiter, no Redis): what a 429 costs the framework itself. */
export const HAND_429 = {
  headers: { 'RateLimit-Policy': '"bench-hot";q=100;w=3600', RateLimit: '"bench-hot";r=0;t=3600', 'Retry-After': '3600' },
  body: { statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded, retry in 3600 seconds' },
};
