import type { RuleInput } from '@floodgate/core';

/*
 * The example API, the same in Express, Fastify and Koa: every route is under the global limit (20 per
 * 10 s and 500 per hour per client); /search adds its own stricter one; /login adds one per account, so
 * guessing one user's password from many IPs is limited too. Only the wiring differs per framework.
 */
export interface RouteLimit {
  name: string;
  limits: RuleInput | RuleInput[];
  message?: string;
}

export const API_LIMIT: RouteLimit = {
  name: 'api',
  limits: [
    { limit: 20, window: '10s' },
    { limit: 500, window: '1h' },
  ],
};
export const SEARCH_LIMIT: RouteLimit = { name: 'search', limits: { limit: 3, window: '10s' } };
export const LOGIN_LIMIT: RouteLimit = {
  name: 'login',
  limits: { limit: 5, window: '15m' },
  message: 'Too many login attempts for this account; try again later',
};

/** /login counts per account: the body's username; requests without one share the client's IP budget. */
export function loginIdentifiers(body: unknown, defaults: string[]): string | string[] {
  const username: unknown = (body as { username?: unknown } | undefined)?.username;
  return typeof username === 'string' && username.length > 0 ? `account:${username.toLowerCase()}` : defaults;
}

/** What the three routes answer. */
export const replies = {
  home: (remaining: number | undefined) => ({ hello: 'world', remaining }),
  search: (q: unknown) => ({ query: typeof q === 'string' ? q : '', results: [] as string[] }),
  login: { status: 401, body: { error: 'invalid credentials (this is a demo)' } },
};

/** Behind a reverse proxy, TRUST_PROXY=<hop count> tells the framework how many hops to trust. */
export const trustedHops = (): number | undefined => (process.env.TRUST_PROXY ? Number(process.env.TRUST_PROXY) : undefined);
