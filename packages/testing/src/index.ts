export { redisServerBinary, startRedis, type StartedRedis } from './redis-server';
export { connect, closeClients, uniquePrefix, testRedisUrl, commandStats } from './clients';
