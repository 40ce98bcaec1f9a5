import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/express';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
}

/**
 * The example API. Every route is under the global limit (20 per 10 s and 500 per hour per client);
 * /search adds its own stricter one; /login adds one per account, so guessing one user's password from
 * many IPs is limited too.
 */
export function createApp({ redis, prefix = 'floodgate-example' }: AppOptions = {}): Express {
  const app = express();
  // Behind a reverse proxy, tell Express how many hops to trust, e.g. TRUST_PROXY=1; req.ip then follows.
  if (process.env.TRUST_PROXY) app.set('trust proxy', Number(process.env.TRUST_PROXY));
  app.use(express.json());

  app.use(rateLimit({ redis, prefix, name: 'api', limits: [{ limit: 20, window: '10s' }, { limit: 500, window: '1h' }] }));

  app.get('/', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit?.remaining });
  });

  const searchLimit = rateLimit({ redis, prefix, name: 'search', limits: { limit: 3, window: '10s' } });
  app.get('/search', searchLimit, (req, res) => {
    res.json({ query: req.query.q ?? '', results: [] });
  });

  const loginLimit = rateLimit({
    redis, prefix, name: 'login',
    limits: { limit: 5, window: '15m' },
    // Per account: the username in the body; requests without one share the client's IP budget.
    identify: (req, defaults) => {
      const username: unknown = (req.body as { username?: unknown } | undefined)?.username;
      return typeof username === 'string' && username.length > 0 ? `account:${username.toLowerCase()}` : defaults;
    },
    message: 'Too many login attempts for this account; try again later',
  });
  app.post('/login', loginLimit, (_req, res) => {
    res.status(401).json({ error: 'invalid credentials (this is a demo)' });
  });

  return app;
}
