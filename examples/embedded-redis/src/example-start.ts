import { Redis } from 'ioredis';
import { startRedis, type StartedRedis } from './redis';

export interface Running {
  url: string;
  /** Where the counts live: 'Redis at <url>', 'embedded redis-server at <url>' or 'in-memory store'. */
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

/** What each framework's example supplies: build its app on this store and listen. */
export type Listen = (app: { redis?: Redis; prefix?: string }, port: number) => Promise<{ url: string; close(): Promise<void> }>;

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

/** Opens the store, starts one framework's example on it and prints how to try it. */
export async function startExample(framework: string, listen: Listen, options: StartOptions = {}): Promise<Running> {
  const verbose = options.verbose ?? true;
  const say = (line: string): void => {
    if (verbose) console.log(line);
  };
  const { redis, store, embedded } = await openStore(options.redisUrl ?? process.env.REDIS_URL, say);
  const server = await listen({ redis, prefix: options.prefix }, options.port ?? Number(process.env.PORT ?? 3000));
  const url = server.url;
  say(`Floodgate ${framework} example on ${url} (store: ${store})`);
  say('Try:');
  say(`  curl -i ${url}/                                   # 20 per 10 s per client`);
  say(`  for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\\n' "${url}/search?q=x"; done   # 4th is 429`);
  say(`  curl -i -X POST -H 'content-type: application/json' -d '{"username":"ada"}' ${url}/login   # 5 per 15 min per account`);
  return {
    url,
    store,
    async close() {
      await server.close();
      redis?.disconnect();
      await embedded?.stop();
    },
  };
}

/** The examples' entry point (`npm start`): run until SIGINT or SIGTERM. */
export function runServer(start: () => Promise<Running>): void {
  void start().then(
    (running) => {
      const stop = (): void => void running.close().then(() => process.exit(0));
      process.once('SIGINT', stop).once('SIGTERM', stop);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
