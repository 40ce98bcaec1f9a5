import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/express';
import { instrumentPrometheus } from '@floodgate/metrics/prometheus';
import { Registry } from 'prom-client';
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
  const api = rateLimit({ redis, prefix, ...API_LIMIT });
  const search = rateLimit({ redis, prefix, ...SEARCH_LIMIT });
  const loginLimit = rateLimit({ redis, prefix, ...LOGIN_LIMIT, identify: (req, defaults) => loginIdentifiers(req.body, defaults) });
  const limiters = [api.limiter, search.limiter, loginLimit.limiter];

  // Operating it (docs/operating.md): Prometheus metrics and a readiness probe, both before the limits, so a
  // scraper or a load balancer is never rate limited. In production, serve them on an internal port.
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
    res.json(replies.home(req.rateLimit?.remaining));
  });
  // A route limit ADDS to the global one.
  app.get('/search', search, (req, res) => {
    res.json(replies.search(req.query.q));
  });
  app.post('/login', loginLimit, (_req, res) => {
    res.status(replies.login.status).json(replies.login.body);
  });
  return app;
}
