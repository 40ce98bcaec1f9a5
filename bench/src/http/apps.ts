import { createServer, type RequestListener } from 'node:http';
import type Redis from 'ioredis';
import type { Shape } from './shapes';

/** Starts the app on 127.0.0.1:port. */
export type Listen = (port: number) => Promise<void>;
/** Builds one variant's app for a shape, with the Redis client it may use. */
export type AppFactory = (shape: Shape, redis: Redis) => Listen | Promise<Listen>;

/** A plain Node server around a request listener (Express apps, Koa's callback()). */
export function serve(listener: RequestListener): Listen {
  const server = createServer(listener);
  server.keepAliveTimeout = 60_000;
  return (port) => new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
}
