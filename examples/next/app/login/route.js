import { routeRateLimit } from '@floodgate/next';
import { prefix, redis, trustProxy } from '../../limits';

export const dynamic = 'force-dynamic';

// Per account (the body's username), 5 per 15 minutes, so guessing one user's password from many IPs is
// limited too; requests without one share the client's IP budget.
const limit = routeRateLimit({
  redis,
  prefix,
  name: 'login',
  trustProxy,
  limits: { limit: 5, window: '15m' },
  message: 'Too many login attempts for this account; try again later',
  identify: async (request, defaults) => {
    const body = await request
      .clone()
      .json()
      .catch(() => undefined);
    const username = body?.username;
    return typeof username === 'string' && username !== '' ? `account:${username.toLowerCase()}` : defaults;
  },
});

export const POST = limit(() => Response.json({ error: 'invalid credentials (this is a demo)' }, { status: 401 }));
