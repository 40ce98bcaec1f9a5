import { rateLimit } from '@floodgate/next';
import { prefix, redis, trustProxy } from './limits';

// Every route: 20 per 10 s and 500 per hour per client.
export const proxy = rateLimit({
  redis,
  prefix,
  name: 'api',
  trustProxy,
  limits: [
    { limit: 20, window: '10s' },
    { limit: 500, window: '1h' },
  ],
});
