export { redisServerBinary, serveHttp, startRedis, type StartedRedis } from './redis-server';
export { connect, closeClients, uniquePrefix, testRedisUrl, commandStats } from './clients';
export { conformance, type AdapterFactory, type AppSpec, type TestApp, type NeutralOptions, type RoutePath } from './conformance';
export { freePort, waitForPing, spawnRedis, RedisProcess } from './processes';
export { runLoad, trackUnhandledRejections, liveTimers, type Sample, type LoadResult } from './load';
export { startSentinels, forceFailover, ask, SENTINEL_MASTER, type SentinelSetup } from './sentinel';
export { startCluster, type ClusterSetup } from './cluster';
export { exampleSmoke } from './example-smoke';
