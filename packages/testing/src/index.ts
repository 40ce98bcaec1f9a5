export { redisServerBinary, serveHttp, startRedis, type StartedRedis } from './redis-server';
export {
  connect,
  closeClients,
  uniquePrefix,
  testRedisUrl,
  commandStats,
  keysUnder,
  storeClient,
  storeClusterClient,
  closeStoreClient,
  clientKind,
  CLIENT_KINDS,
  type ClientKind,
} from './clients';
export { adversarial } from './adversarial';
export { policyConformance } from './conformance-policies';
export { gate, leavingGet, type Gate, type LeavingRequest } from './held';
export { windowClearOfBoundary } from './windows';
export { limitsConformance } from './conformance-limits';
export {
  conformance,
  answerOf,
  beforeAnswer,
  capabilitiesOf,
  denialBodyOf,
  type AdapterFactory,
  type Capabilities,
  type DenialBody,
  type AppSpec,
  type TestApp,
  type NeutralOptions,
  type RoutePath,
} from './conformance';
export { freePort, waitForPing, spawnRedis, RedisProcess } from './processes';
export { runLoad, liveTimers, collectGarbage, type Sample, type LoadResult } from './load';
export { startSentinels, forceFailover, ask, SENTINEL_MASTER, type SentinelSetup } from './sentinel';
export { startCluster, serverCli, useCluster, type ClusterSetup } from './cluster';
export { sseEvents, sseReadable, sseWebStream, streamPlan } from './sse';
export { budgetConformance } from './budget-conformance';
export { exampleSmoke } from './example-smoke';
export { closeAfterEach, eventually, type Closable } from './lifecycle';
export { ScriptedStore, scripted, scriptedStore, scriptedLimiter, type Cue, type Fault, type ConnectionState } from './scripted-store';
export { TEST_DEADLINE, withTestDeadline } from './deadline';
