import { startRedis } from '../packages/testing/src/redis-server';

/*
 * What no test may do to the shared server: it may be a developer's own Redis (REDIS_URL), so a test touches
 * its own key prefix only (SCAN MATCH prefix, never KEYS), and one that needs SCRIPT FLUSH, CLIENT PAUSE,
 * CONFIG SET, DEBUG and the like starts a server of its own (startRedis/spawnRedis). The server started here
 * refuses these commands (NOPERM), so a test that forgets fails in `npm test` rather than on someone's data.
 */
const SERVER_WIDE_COMMANDS = [
  'flushall',
  'flushdb',
  'keys',
  'swapdb',
  'shutdown',
  'debug',
  'monitor',
  'save',
  'bgsave',
  'bgrewriteaof',
  'replicaof',
  'slaveof',
  'failover',
  'module',
  'config|set',
  'config|resetstat',
  'config|rewrite',
  'script|flush',
  'script|kill',
  'function|flush',
  'client|pause',
  'client|kill',
  'acl|setuser',
  'acl|deluser',
  'acl|load',
  'acl|save',
  'memory|purge',
  'latency|reset',
  'slowlog|reset',
];

/** Starts the shared test redis-server on a free port, unless REDIS_URL points at one. */
export default async function globalSetup(): Promise<void> {
  const env = process.env;
  // What every file gets back after a file of the valkey project (test/setup-server.ts).
  if (env.FLOODGATE_REDIS_SERVER) env.FLOODGATE_RUN_REDIS_SERVER = env.FLOODGATE_REDIS_SERVER;
  if (env.REDIS_URL) {
    env.FLOODGATE_TEST_REDIS_URL = env.FLOODGATE_RUN_REDIS_URL = env.REDIS_URL;
    return;
  }
  const acl = ['--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', ...SERVER_WIDE_COMMANDS.map((c) => `-${c}`)];
  const started = [await startRedis(acl)];
  env.FLOODGATE_TEST_REDIS_URL = env.FLOODGATE_RUN_REDIS_URL = started[0]!.url;
  // The valkey project's shared server (jest.config.ts sets FLOODGATE_VALKEY_SERVER when valkey-server is installed).
  if (env.FLOODGATE_VALKEY_SERVER) {
    const before = env.FLOODGATE_REDIS_SERVER;
    env.FLOODGATE_REDIS_SERVER = env.FLOODGATE_VALKEY_SERVER;
    try {
      started.push(await startRedis(acl));
    } finally {
      if (before === undefined) delete env.FLOODGATE_REDIS_SERVER;
      else env.FLOODGATE_REDIS_SERVER = before;
    }
    env.FLOODGATE_TEST_VALKEY_URL = started[1]!.url;
  }
  (globalThis as { __floodgateRedis?: unknown }).__floodgateRedis = started;
}
