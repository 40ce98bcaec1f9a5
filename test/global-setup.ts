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
  if (process.env.REDIS_URL) {
    process.env.FLOODGATE_TEST_REDIS_URL = process.env.REDIS_URL;
    return;
  }
  const redis = await startRedis(['--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', ...SERVER_WIDE_COMMANDS.map((c) => `-${c}`)]);
  (globalThis as { __floodgateRedis?: unknown }).__floodgateRedis = redis;
  process.env.FLOODGATE_TEST_REDIS_URL = redis.url;
}
