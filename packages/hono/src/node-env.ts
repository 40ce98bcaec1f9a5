import type { Context } from 'hono';

/**
 * @hono/node-server's Node request and response for this request (`c.env.incoming` and `c.env.outgoing`,
 * or under `c.env.server` when the app merges its own bindings), when the app runs there; undefined
 * on another runtime or behind `app.request()`.
 */
export function nodeEnv(c: Context): { incoming?: unknown; outgoing?: unknown } | undefined {
  const env = c.env as { server?: { incoming?: unknown; outgoing?: unknown }; incoming?: unknown; outgoing?: unknown } | undefined;
  return env?.server ?? env;
}
