import type { Context } from 'hono';

/** Default user: `c.get('user').id`, where an auth middleware that sets `c.set('user', ...)` leaves it. */
export function defaultUser(c: Context): unknown {
  return ((c.get as (key: string) => unknown)('user') as { id?: unknown } | undefined)?.id;
}

/**
 * A denial Floodgate made: its status and its body as JSON (as the Express, Fastify and Koa adapters send
 * it). Its headers are already on the context: each middleware writes an outcome's headers once, whatever it is.
 */
export function deny(c: Context, outcome: { status: number; body?: object; json?: string }): Response {
  // c.header, not a headers object: Hono reads one with for...in, which a polluted Object.prototype breaks.
  c.header('Content-Type', 'application/json; charset=utf-8');
  return c.body(outcome.json ?? JSON.stringify(outcome.body), outcome.status as 429);
}

/** The answer to a client that left before its turn (a concurrency lease, a slow-down delay): no handler runs, and no one reads it. */
export function gone(c: Context): Response {
  return c.body(null, 499 as 429);
}
