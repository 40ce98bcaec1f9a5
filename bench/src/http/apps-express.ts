import express, { type RequestHandler } from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import { RedisStore as ErlRedisStore, type RedisReply } from 'rate-limit-redis';
import { RateLimiterRedis, RateLimiterUnion, type RateLimiterAbstract } from 'rate-limiter-flexible';
import * as floodgateExpress from '@floodgate/express';
import { HAND_429, adapter, floodgateOptions, rlfSettle, serve, type AppFactory, type Listen } from './apps';
import { ALGORITHM_VARIANTS, HEADERS_OFF, clientOf, peerGroups } from './shapes';

/*
 * Express 5: no limiter; Floodgate (@floodgate/express); express-rate-limit 8 + rate-limit-redis;
 * rate-limiter-flexible (its settle middleware in the settle shape).
 */

function app(limiters: RequestHandler[]): Listen {
  const a = express();
  a.disable('x-powered-by');
  for (const l of limiters) a.use(l);
  a.get('/', (_req, res) => {
    res.send('ok');
  });
  return serve(a);
}

/**
 * rate-limiter-flexible has no Express middleware: this is the one its README shows, with a union for several
 * rules on one identifier (and one union per identifier, consumed together, for several identifiers).
 */
function rlfMiddleware(groups: { limiter: RateLimiterAbstract | RateLimiterUnion; id: (c: string) => string }[]): RequestHandler {
  return (req, res, next) => {
    const c = clientOf(req.headers);
    const consumed =
      groups.length === 1 ? groups[0]!.limiter.consume(groups[0]!.id(c)) : Promise.all(groups.map((g) => g.limiter.consume(g.id(c))));
    consumed.then(
      () => next(),
      (rej: unknown) => (rej instanceof Error ? next(rej) : void res.status(429).send('Too Many Requests')),
    );
  };
}

/** rate-limiter-flexible's settle work (apps.ts rlfSettle) in the middleware above: the reward on the response's 'finish'. */
function rlfSettleMiddleware(peer: ReturnType<typeof rlfSettle>): RequestHandler {
  return (req, res, next) => {
    const c = clientOf(req.headers);
    peer.consume(c).then(
      () => {
        res.on('finish', () => peer.settle(c));
        next();
      },
      (rej: unknown) => (rej instanceof Error ? next(rej) : void res.status(429).send('Too Many Requests')),
    );
  };
}

const floodgate: AppFactory = (shape, redis, variant) =>
  app([
    adapter(variant, '@floodgate/express', floodgateExpress).rateLimit(
      floodgateOptions<express.Request>(shape, redis, variant, (req) => req.headers),
    ),
  ]);

export const expressApps: Record<string, AppFactory> = {
  baseline: () => app([]),
  floodgate,
  ...Object.fromEntries(ALGORITHM_VARIANTS.map((a) => [`floodgate:${a}`, floodgate])),
  [`floodgate:${HEADERS_OFF}`]: floodgate,
  'floodgate+autopipeline': floodgate,
  'express-rate-limit': (shape, redis) =>
    app(
      shape.peers.map((r, i) =>
        expressRateLimit({
          windowMs: r.windowMs,
          limit: r.limit,
          standardHeaders: 'draft-8',
          legacyHeaders: false,
          keyGenerator: (req) => r.id(clientOf(req.headers)),
          store: new ErlRedisStore({
            prefix: `erl${i}:`,
            sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
          }),
        }),
      ),
    ),
  'rate-limiter-flexible': (shape, redis) => {
    if (shape.budget !== undefined) return app([rlfSettleMiddleware(rlfSettle(shape, redis))]);
    let n = 0;
    const groups = peerGroups(shape).map((rules) => {
      const limiters = rules.map(
        (r) => new RateLimiterRedis({ storeClient: redis, keyPrefix: `rlf${n++}`, points: r.limit, duration: r.windowMs / 1000 }),
      );
      return { limiter: limiters.length === 1 ? limiters[0]! : new RateLimiterUnion(...limiters), id: rules[0]!.id };
    });
    return app([rlfMiddleware(groups)]);
  },
  '429': () =>
    app([
      (_req, res) => {
        res.set(HAND_429.headers).status(429).json(HAND_429.body);
      },
    ]),
};
