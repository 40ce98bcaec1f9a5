export { redisServerBinary, startRedis, type StartedRedis } from './redis-server';
export { connect, closeClients, uniquePrefix, testRedisUrl, commandStats } from './clients';
export { conformance, type AdapterFactory, type AppSpec, type TestApp, type NeutralOptions, type RoutePath } from './conformance';
