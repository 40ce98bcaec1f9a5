export { redisServerBinary, startRedis, type StartedRedis } from './redis';

// The examples' shared parts: one API definition, one store/start/banner, one demo, for all three frameworks.
export { API_LIMIT, SEARCH_LIMIT, LOGIN_LIMIT, loginIdentifiers, replies, trustedHops, type RouteLimit } from './example-api';
export { startExample, runServer, describeStartError, type Running, type StartOptions, type Listen } from './example-start';
export { runDemo, demoMain } from './example-demo';
export { serveHttp, type Served } from './serve-http';
