import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/express';
import { API_LIMIT, LOGIN_LIMIT, SEARCH_LIMIT, loginIdentifiers, replies, trustedHops } from '@floodgate/embedded-redis';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
}

/** The example API (see example-api.ts in @floodgate/embedded-redis) in Express. */
export function createApp({ redis, prefix = 'floodgate-example' }: AppOptions = {}): Express {
  const app = express();
  // Behind a reverse proxy, TRUST_PROXY=<hops>: req.ip then follows X-Forwarded-For that far.
  if (trustedHops() !== undefined) app.set('trust proxy', trustedHops());
  app.use(express.json());
  app.use(rateLimit({ redis, prefix, ...API_LIMIT }));

  app.get('/', (req, res) => {
    res.json(replies.home(req.rateLimit?.remaining));
  });
  // A route limit ADDS to the global one.
  app.get('/search', rateLimit({ redis, prefix, ...SEARCH_LIMIT }), (req, res) => {
    res.json(replies.search(req.query.q));
  });
  const loginLimit = rateLimit({ redis, prefix, ...LOGIN_LIMIT, identify: (req, defaults) => loginIdentifiers(req.body, defaults) });
  app.post('/login', loginLimit, (_req, res) => {
    res.status(replies.login.status).json(replies.login.body);
  });
  return app;
}
