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
async function openStore(
  redisUrl: string | undefined,
  say: (line: string) => void,
): Promise<{ redis?: Redis; store: string; embedded?: StartedRedis }> {
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
  let server: Awaited<ReturnType<Listen>>;
  try {
    server = await listen({ redis, prefix: options.prefix }, options.port ?? Number(process.env.PORT ?? 3000));
  } catch (err) {
    // Not listening (the port is in use, say): leave no embedded redis-server behind.
    redis?.disconnect();
    await embedded?.stop();
    throw err;
  }
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

/** One line for the mistakes a user makes starting the example; anything else with its stack. */
export function describeStartError(err: unknown): string {
  const e = err as (NodeJS.ErrnoException & { port?: number }) | undefined;
  if (e?.code === 'EADDRINUSE') {
    const port = e.port ?? process.env.PORT ?? 3000;
    return `port ${port} is in use; set PORT=... to use another one (PORT=${Number(port) + 1} npm start)`;
  }
  if (e?.code === 'EACCES' && e.syscall === 'listen')
    return `not allowed to listen on port ${e.port ?? process.env.PORT}; set PORT=... to a port above 1023`;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/**
 * The examples' entry point (`npm start`): run until SIGINT or SIGTERM, then close the HTTP server and stop
 * the embedded redis-server, and exit 0. A signal during start-up stops the example once it has started.
 * Further signals while stopping are ignored (Ctrl-C reaches this process twice under `npm start`: from the
 * terminal and passed on by scripts/example.mjs); a stop that takes over 10 s exits 1.
 */
export function runServer(start: () => Promise<Running>): void {
  const starting = start();
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      console.error('the example did not stop within 10 s; exiting');
      process.exit(1);
    }, 10_000).unref();
    starting
      .then(
        (running) => running.close(),
        () => undefined,
      )
      .then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(describeStartError(err));
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
  starting.catch((err: unknown) => {
    if (stopping) return;
    console.error(describeStartError(err));
    process.exit(1);
  });
}
