import { Redis } from 'ioredis';
import type { Served } from './serve-http';

export interface Running {
  url: string;
  /** Where the counts live: 'Redis at <url>' or 'in-memory store'. */
  store: string;
  close(): Promise<void>;
}

export interface StartOptions {
  port?: number;
  /** Omitted: the example's in-memory store. */
  redisUrl?: string;
  prefix?: string;
  /** Accepted for older callers; an example started in process prints nothing. */
  verbose?: boolean;
}

/** How a test builds one framework's example app on this store and listens. */
export type Listen = (app: { redis?: Redis; prefix?: string }, port: number) => Promise<Served>;

/**
 * Starts an example's app in this process, for the examples' tests and the dashboard preview (a user runs
 * the example's own src/server.ts): on the Redis at redisUrl, or the in-memory store; port 0 by default.
 */
export async function startExample(listen: Listen, options: StartOptions = {}): Promise<Running> {
  const redis = options.redisUrl ? new Redis(options.redisUrl) : undefined;
  let server: Served;
  try {
    server = await listen({ redis, prefix: options.prefix }, options.port ?? 0);
  } catch (err) {
    redis?.disconnect();
    throw err;
  }
  return {
    url: server.url,
    store: options.redisUrl ? `Redis at ${options.redisUrl}` : 'in-memory store',
    async close() {
      await server.close();
      redis?.disconnect();
    },
  };
}
