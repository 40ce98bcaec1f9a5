import express, { type RequestHandler } from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import { RedisStore as ErlRedisStore, type RedisReply } from 'rate-limit-redis';
import { RateLimiterRedis, RateLimiterUnion, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { rateLimit as floodgate } from '@floodgate/express';
import { serve, type AppFactory, type Listen } from './apps';
import { clientOf, floodgateLimits } from './shapes';

/* Express 5: no limiter; Floodgate (@floodgate/express); express-rate-limit 8 + rate-limit-redis; rate-limiter-flexible. */

function app(limiters: RequestHandler[]): Listen {
  const a = express();
  a.disable('x-powered-by');
  for (const l of limiters) a.use(l);
  a.get('/', (_req, res) => {
    res.send('ok');
  });
  return serve(a);
}

/** rate-limiter-flexible has no Express middleware: this is the one its README shows, with a union for several rules. */
function rlfMiddleware(limiter: RateLimiterAbstract | RateLimiterUnion): RequestHandler {
  return (req, res, next) => {
    limiter.consume(clientOf(req.headers)).then(
      () => next(),
      (rej: unknown) => (rej instanceof Error ? next(rej) : void res.status(429).send('Too Many Requests')),
    );
  };
}

export const expressApps: Record<string, AppFactory> = {
  baseline: () => app([]),
  floodgate: (shape, redis) =>
    app([
      floodgate({
        redis,
        name: `bench-${shape.name}`,
        limits: floodgateLimits(shape),
        identify: (req) => shape.identifiers(clientOf(req.headers)),
      }),
    ]),
  'express-rate-limit': (shape, redis) =>
    app(
      shape.peers.map((r, i) =>
        expressRateLimit({
          windowMs: r.windowMs,
          limit: r.limit,
          standardHeaders: 'draft-8',
          legacyHeaders: false,
          keyGenerator: (req) => clientOf(req.headers),
          store: new ErlRedisStore({
            prefix: `erl${i}:`,
            sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
          }),
        }),
      ),
    ),
  'rate-limiter-flexible': (shape, redis) => {
    const limiters = shape.peers.map(
      (r, i) => new RateLimiterRedis({ storeClient: redis, keyPrefix: `rlf${i}`, points: r.limit, duration: r.windowMs / 1000 }),
    );
    return app([rlfMiddleware(limiters.length === 1 ? limiters[0]! : new RateLimiterUnion(...limiters))]);
  },
};
