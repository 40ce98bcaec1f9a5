import { Hono } from 'hono';
import type { Redis } from 'ioredis';
import { rateLimit } from '@floodgate/hono';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
  /** Behind a reverse proxy: its addresses or CIDR ranges (or 'loopback'), whose X-Forwarded-For is believed. */
  trustProxy?: string[];
}

/**
 * The example API: every route is under the global limit (20 per 10 s and 500 per hour per client);
 * /search adds its own stricter one; /login adds one per account, so guessing one user's password from
 * many IPs is limited too.
 */
export function createApp({ redis, prefix = 'floodgate-example', trustProxy }: AppOptions = {}): Hono {
  const app = new Hono();
  app.use(
    rateLimit({
      redis,
      prefix,
      name: 'api',
      trustProxy,
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
    }),
  );

  app.get('/', (c) => c.json({ hello: 'world', remaining: c.get('rateLimit')?.remaining }));
  // A route limit ADDS to the global one.
  app.get('/search', rateLimit({ redis, prefix, name: 'search', trustProxy, limits: { limit: 3, window: '10s' } }), (c) =>
    c.json({ query: c.req.query('q') ?? '', results: [] }),
  );
  const login = rateLimit({
    redis,
    prefix,
    name: 'login',
    trustProxy,
    limits: { limit: 5, window: '15m' },
    message: 'Too many login attempts for this account; try again later',
    // Per account (the body's username); requests without one share the client's IP budget.
    identify: async (c, defaults) => {
      const body: unknown = await c.req.json().catch(() => undefined);
      const username = (body as { username?: unknown } | undefined)?.username;
      return typeof username === 'string' && username !== '' ? `account:${username.toLowerCase()}` : defaults;
    },
  });
  app.post('/login', login, (c) => c.json({ error: 'invalid credentials (this is a demo)' }, 401));
  return app;
}
