import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/express';
import { instrumentPrometheus } from '@floodgate/metrics/prometheus';
import { Registry } from 'prom-client';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
  /** Behind a reverse proxy: how many hops of X-Forwarded-For to trust (req.ip then follows them). */
  trustProxy?: number;
}

/**
 * The example API: every route is under the global limit (20 per 10 s and 500 per hour per client); /search
 * adds its own stricter one; /login adds one per account, so guessing one user's password from many IPs is
 * limited too. /metrics and /health come first, so a scraper or a load balancer is never rate limited.
 */
export function createApp({ redis, prefix = 'floodgate-example', trustProxy }: AppOptions = {}): Express {
  const app = express();
  if (trustProxy !== undefined) app.set('trust proxy', trustProxy);
  app.use(express.json());
  const api = rateLimit({
    redis,
    prefix,
    name: 'api',
    // Plans: the first applies to every client; `npx floodgate override set key:team-7 --plan pro` moves one
    // identifier to another, on the running app (overrides: true reads them; docs/overrides.md).
    limits: {
      free: [
        { limit: 20, window: '10s' },
        { limit: 500, window: '1h' },
      ],
      pro: [
        { limit: 200, window: '10s' },
        { limit: 5000, window: '1h' },
      ],
    },
    overrides: true,
  });
  const search = rateLimit({ redis, prefix, name: 'search', limits: { limit: 3, window: '10s' } });
  const login = rateLimit({
    redis,
    prefix,
    name: 'login',
    limits: { limit: 5, window: '15m' },
    message: 'Too many login attempts for this account; try again later',
    // Per account (the body's username); requests without one share the client's IP budget.
    identify: (req, defaults) => {
      const username: unknown = (req.body as { username?: unknown } | undefined)?.username;
      return typeof username === 'string' && username !== '' ? `account:${username.toLowerCase()}` : defaults;
    },
  });
  const limiters = [api.limiter, search.limiter, login.limiter];

  // Operating it (docs/operating.md): Prometheus metrics and a readiness probe. In production, serve them
  // on an internal port.
  const registry = new Registry();
  instrumentPrometheus(limiters, { registry });
  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });
  app.get('/health', async (_req, res) => {
    const reports = await Promise.all(limiters.map(async (l) => ({ limiter: l.name, ...(await l.health()) })));
    const down = reports.some((r) => r.status === 'down');
    res
      .status(down ? 503 : 200)
      .json({ status: down ? 'down' : reports.some((r) => r.status === 'degraded') ? 'degraded' : 'ok', limiters: reports });
  });

  app.use(api);

  app.get('/', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit?.remaining });
  });
  // A route limit ADDS to the global one.
  app.get('/search', search, (req, res) => {
    res.json({ query: typeof req.query.q === 'string' ? req.query.q : '', results: [] });
  });
  app.post('/login', login, (_req, res) => {
    res.status(401).json({ error: 'invalid credentials (this is a demo)' });
  });
  return app;
}
