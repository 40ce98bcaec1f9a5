// Repository-only tooling around the examples (none of examples/express, fastify or koa depends on it):
// the redis-server `npm start` embeds and the test harness starts, the demo driver, and starting an
// example's app in process for the examples' tests.
export { redisServerBinary, startRedis, type StartedRedis } from './redis';
export { startExample, type Running, type StartOptions, type Listen } from './example-start';
export { runDemo } from './example-demo';
export { serveHttp, type Served } from './serve-http';
