/*
 * Runs before every test file (jest.config.ts, setupFiles). A worker runs files of several projects in turn,
 * so the server a file talks to is set here each time: the `valkey` project's files get the shared Valkey
 * the global setup started and start valkey-server for servers of their own (FLOODGATE_REDIS_SERVER, read by
 * redisServerBinary()); every other file gets the run's own settings back.
 */
const onValkey = (globalThis as { FLOODGATE_SERVER?: string }).FLOODGATE_SERVER === 'valkey';
const env = process.env;
if (onValkey) {
  env.FLOODGATE_REDIS_SERVER = env.FLOODGATE_VALKEY_SERVER;
  env.FLOODGATE_TEST_REDIS_URL = env.FLOODGATE_TEST_VALKEY_URL;
} else {
  if (env.FLOODGATE_RUN_REDIS_SERVER) env.FLOODGATE_REDIS_SERVER = env.FLOODGATE_RUN_REDIS_SERVER;
  else delete env.FLOODGATE_REDIS_SERVER;
  if (env.FLOODGATE_RUN_REDIS_URL) env.FLOODGATE_TEST_REDIS_URL = env.FLOODGATE_RUN_REDIS_URL;
}
