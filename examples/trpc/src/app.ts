import { initTRPC } from '@trpc/server';
import type { Redis } from 'ioredis';
import { rateLimit, rateLimitContext, rateLimitErrorFormatter } from '@floodgate/trpc';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
}

/** The context: the client's address and the response's rate-limit headers (rateLimitContext). */
export const createContext = ({ req }: { req: Parameters<typeof rateLimitContext>[0] }) => ({ ...rateLimitContext(req) });
type Context = Awaited<ReturnType<typeof createContext>>;

const t = initTRPC.context<Context>().create({ errorFormatter: rateLimitErrorFormatter });

/** A username from login's input, as the client sent it (the middleware runs before any validator). */
function usernameOf(input: unknown): string | undefined {
  const username = (input as { username?: unknown } | undefined)?.username;
  return typeof username === 'string' && username !== '' ? username.toLowerCase() : undefined;
}

/**
 * The example API: every procedure is under the global limit (20 per 10 s and 500 per hour per client);
 * `search` adds its own stricter one; `login` adds one per account, so guessing one user's password from
 * many IPs is limited too. Each call of a batch counts.
 */
export function createRouter({ redis, prefix = 'floodgate-example' }: AppOptions = {}) {
  const api = rateLimit<Context>({
    redis,
    prefix,
    name: 'api',
    limits: [
      { limit: 20, window: '10s' },
      { limit: 500, window: '1h' },
    ],
  });
  const search = rateLimit<Context>({ redis, prefix, name: 'search', limits: { limit: 3, window: '10s' } });
  const login = rateLimit<Context>({
    redis,
    prefix,
    name: 'login',
    limits: { limit: 5, window: '15m' },
    message: 'Too many login attempts for this account; try again later',
    // Per account; a call without a username shares the client's IP budget.
    identify: async ({ getRawInput }, defaults) => {
      const username = usernameOf(await getRawInput());
      return username === undefined ? defaults : `account:${username}`;
    },
  });
  const procedure = t.procedure.use(api);
  return t.router({
    hello: procedure.query(({ ctx }) => ({ hello: 'world', remaining: ctx.rateLimit?.remaining })),
    // A procedure's limit ADDS to the global one.
    search: procedure
      .use(search)
      .input((value) => ({ q: String((value as { q?: unknown } | undefined)?.q ?? '') }))
      .query(({ input }) => ({ query: input.q, results: [] })),
    login: procedure
      .use(login)
      .input((value) => ({ username: usernameOf(value) ?? '' }))
      .mutation(() => ({ ok: false, error: 'invalid credentials (this is a demo)' })),
  });
}

export type AppRouter = ReturnType<typeof createRouter>;
