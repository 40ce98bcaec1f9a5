// The lookup and start logic is shared with the runnable examples, which cannot import a test package.
export { redisServerBinary, startRedis, type StartedRedis } from '@floodgate/embedded-redis';
