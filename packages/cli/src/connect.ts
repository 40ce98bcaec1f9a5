import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { CliError, EXIT } from './errors';
import { maskUrl } from './secrets';

/** A connected client: one Redis, or a Cluster found behind the URL's node. */
export interface Connection {
  client: Redis | Cluster;
  cluster: boolean;
  close(): Promise<void>;
}

const EXPECTED = 'expected redis://[user:password@]host[:port][/db] or rediss://...';

/**
 * A URL the client would read as we do, or a usage error quoting it masked. One without a host (`redis:/h`,
 * `redis:h`, `redis:///path`) is refused: ioredis reads it as a socket path or as localhost:6379.
 */
function parseUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new CliError(EXIT.usage, `not a Redis URL: '${maskUrl(url)}' (${EXPECTED})`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new CliError(EXIT.usage, `not a Redis URL: '${maskUrl(url)}' (the scheme must be redis:// or rediss://)`);
  }
  if (u.hostname === '') {
    throw new CliError(EXIT.usage, `not a Redis URL: '${maskUrl(url)}' (no host: ${EXPECTED})`);
  }
  return u;
}

/** Settles with `promise`, or rejects after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const message = e?.message ?? String(err);
  if (/Unknown RESP type/.test(message)) return 'the server there does not speak the Redis protocol';
  return e?.code && !message.includes(e.code) ? `${e.code}: ${message}` : message;
}

/**
 * Connects to `url` within `timeoutMs`: no retries, no offline queue, so a wrong host or port fails at once
 * (exit 3) rather than hanging. A node with cluster_enabled:1 is reconnected as a Cluster client.
 */
export async function connect(url: string, timeoutMs: number): Promise<Connection> {
  const u = parseUrl(url);
  const options: RedisOptions = {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    // A socket that never connected is not waited for on the way out (ioredis waits 2 s by default).
    disconnectTimeout: 50,
  };
  const probe = new Redis(url, options);
  // The socket's own error (ECONNREFUSED, ENOTFOUND, NOAUTH ...) says more than "Connection is closed".
  let cause: unknown;
  probe.on('error', (err) => (cause ??= err));
  const fail = (err: unknown): never => {
    probe.disconnect();
    throw new CliError(EXIT.connection, `cannot connect to ${maskUrl(url)}: ${describeError(cause ?? err)}`);
  };
  let info = '';
  try {
    await within(probe.connect(), timeoutMs, 'connecting');
    info = await within(probe.info('cluster'), timeoutMs, 'INFO');
  } catch (err) {
    fail(err);
  }
  if (!/cluster_enabled:1/.test(info)) {
    return { client: probe, cluster: false, close: async () => void (await probe.quit().catch(() => probe.disconnect())) };
  }
  probe.disconnect();
  const { host, port } = { host: u.hostname, port: Number(u.port || 6379) };
  const cluster = new Cluster([{ host, port }], {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: timeoutMs,
    redisOptions: {
      ...options,
      username: u.username ? decodeURIComponent(u.username) : undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      tls: u.protocol === 'rediss:' ? {} : undefined,
    },
  });
  let clusterCause: unknown;
  cluster.on('error', (err) => (clusterCause ??= err));
  try {
    await within(cluster.connect(), timeoutMs, 'connecting to the Cluster');
  } catch (err) {
    cluster.disconnect();
    throw new CliError(EXIT.connection, `cannot connect to the Cluster at ${maskUrl(url)}: ${describeError(clusterCause ?? err)}`);
  }
  return { client: cluster, cluster: true, close: async () => void (await cluster.quit().catch(() => cluster.disconnect())) };
}
