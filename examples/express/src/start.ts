import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { startRedis, type StartedRedis } from '@floodgate/embedded-redis';
import { createApp } from './app';

export interface Running {
  url: string;
  /** Where the counts live: 'REDIS_URL', 'embedded redis-server' or 'in-memory store'. */
  store: string;
  close(): Promise<void>;
}

export interface StartOptions {
  port?: number;
  redisUrl?: string;
  prefix?: string;
  /** Print the banner and curl lines (default true). */
  verbose?: boolean;
}

/** The store: REDIS_URL if given, else an embedded redis-server from PATH, else the in-memory store. */
async function openStore(redisUrl: string | undefined, say: (line: string) => void): Promise<{ redis?: Redis; store: string; embedded?: StartedRedis }> {
  if (redisUrl) return { redis: new Redis(redisUrl), store: `Redis at ${redisUrl}` };
  try {
    const embedded = await startRedis();
    return { redis: new Redis(embedded.url), store: `embedded redis-server at ${embedded.url}`, embedded };
  } catch (err) {
    say('');
    say('  *****************************************************************************');
    say('  *  No redis-server on PATH and no REDIS_URL: running on the IN-MEMORY store.  *');
    say('  *  Limits hold for this process only. Install Redis or set REDIS_URL.         *');
    say('  *****************************************************************************');
    say(`  (${err instanceof Error ? err.message.split('(')[0]!.trim() : String(err)})`);
    return { store: 'in-memory store' };
  }
}

export async function start(options: StartOptions = {}): Promise<Running> {
  const verbose = options.verbose ?? true;
  const say = (line: string): void => {
    if (verbose) console.log(line);
  };
  const { redis, store, embedded } = await openStore(options.redisUrl ?? process.env.REDIS_URL, say);
  const app = createApp({ redis, prefix: options.prefix });
  const server = app.listen(options.port ?? Number(process.env.PORT ?? 3000));
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const url = `http://localhost:${(server.address() as AddressInfo).port}`;
  say(`Floodgate Express example on ${url} (store: ${store})`);
  say('Try:');
  say(`  curl -i ${url}/                                   # 20 per 10 s per client`);
  say(`  for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\\n' "${url}/search?q=x"; done   # 4th is 429`);
  say(`  curl -i -X POST -H 'content-type: application/json' -d '{"username":"ada"}' ${url}/login   # 5 per 15 min per account`);
  return {
    url,
    store,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis?.disconnect();
      await embedded?.stop();
    },
  };
}
