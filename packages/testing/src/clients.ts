import { randomBytes } from 'node:crypto';
import Redis, { Cluster, type RedisOptions } from 'ioredis';
import type { RedisClient } from '@floodgate/core';

/*
 * The other client libraries load when a test asks for one (node-redis alone takes about 0.2 s to load, and
 * nearly every test file imports this one but runs on ioredis).
 */
let glideQuiet = false;
const iovalkey = () => import('iovalkey');
const nodeRedis = () => import('redis');
const glide = async () => {
  const library = await import('@valkey/valkey-glide');
  if (!glideQuiet) {
    glideQuiet = true;
    // GLIDE logs every error reply (a NOSCRIPT included) to the console by default.
    library.Logger.setLoggerConfig('off');
  }
  return library;
};

/** The shared test Redis, started by the jest global setup (or REDIS_URL when set). */
export function testRedisUrl(): string {
  const url = process.env.FLOODGATE_TEST_REDIS_URL ?? process.env.REDIS_URL;
  if (!url) throw new Error('no test Redis: run tests through jest (its global setup starts one) or set REDIS_URL');
  return url;
}

const clients = new Set<Redis>();

/**
 * An ioredis client for tests: fast, explicit reconnects (ioredis 6 backs off exponentially by default)
 * and no re-sending of unanswered commands after a reconnect. Closed by closeClients().
 */
export function connect(url = testRedisUrl(), options: RedisOptions = {}): Redis {
  const client = new Redis(url, {
    retryStrategy: () => 50,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    // Closing a client whose server a test stopped would otherwise hold jest open for 2 s.
    disconnectTimeout: 100,
    ...options,
  });
  client.on('error', () => undefined);
  clients.add(client);
  return client;
}

export async function closeClients(): Promise<void> {
  const all = [...clients];
  clients.clear();
  const others = [...storeClients];
  storeClients.clear();
  await Promise.all([
    ...all.map((c) => (c.status === 'ready' ? c.quit().catch(() => c.disconnect()) : c.disconnect())),
    ...others.map((c) => closeStoreClient(c)),
  ]);
}

/*
 * The client under test. The check, algorithm, model, undo-receipt and conformance suites give their limiters
 * storeClient() (their own commands stay on connect()'s ioredis), so one jest project per client library runs
 * the same files with another client: FLOODGATE_CLIENT (a jest project's `globals`, or the environment) is
 * ioredis (default), iovalkey, node-redis or glide.
 */
export const CLIENT_KINDS = ['ioredis', 'iovalkey', 'node-redis', 'glide'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

export function clientKind(): ClientKind {
  const v = (globalThis as { FLOODGATE_CLIENT?: string }).FLOODGATE_CLIENT ?? process.env.FLOODGATE_CLIENT ?? 'ioredis';
  if (!(CLIENT_KINDS as readonly string[]).includes(v))
    throw new Error(`FLOODGATE_CLIENT is ${JSON.stringify(v)}; one of ${CLIENT_KINDS.join(', ')}`);
  return v as ClientKind;
}

const storeClients = new Set<object>();

/** An ioredis-like client's test options (fast reconnects, nothing re-sent, quick close). */
const IOREDIS_TEST = { retryStrategy: () => 50, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1, disconnectTimeout: 100 };

/**
 * A client of library `kind` (default: the one under test) on `url`, connected (node-redis: connect() awaited;
 * GLIDE: created). Closed by closeClients(); closeStoreClient() closes one now.
 */
export async function storeClient(url = testRedisUrl(), kind: ClientKind = clientKind()): Promise<RedisClient> {
  if (kind === 'ioredis') return connect(url);
  let client: RedisClient;
  if (kind === 'iovalkey') {
    const { Redis: Valkey } = await iovalkey();
    const c = new Valkey(url, IOREDIS_TEST);
    c.on('error', () => undefined);
    client = c as unknown as RedisClient;
  } else if (kind === 'node-redis') {
    const { createClient } = await nodeRedis();
    const c = createClient({ url, socket: { reconnectStrategy: () => 50, connectTimeout: 2_000 } });
    c.on('error', () => undefined);
    await c.connect();
    client = c as unknown as RedisClient;
  } else {
    const { GlideClient } = await glide();
    const { hostname, port } = new URL(url);
    client = (await GlideClient.createClient({
      addresses: [{ host: hostname, port: Number(port) }],
      requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
    })) as unknown as RedisClient;
  }
  storeClients.add(client);
  return client;
}

/** A Cluster client of library `kind` on these nodes (ioredis and iovalkey: Cluster; node-redis: createCluster; GLIDE: GlideClusterClient). */
export async function storeClusterClient(nodes: { host: string; port: number }[], kind: ClientKind = clientKind()): Promise<RedisClient> {
  let client: RedisClient;
  if (kind === 'ioredis' || kind === 'iovalkey') {
    const C = kind === 'ioredis' ? Cluster : (await iovalkey()).Cluster;
    const c = new C(nodes, { clusterRetryStrategy: () => 50, redisOptions: IOREDIS_TEST });
    c.on('error', () => undefined);
    client = c as unknown as RedisClient;
  } else if (kind === 'node-redis') {
    const { createCluster } = await nodeRedis();
    const c = createCluster({
      rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
      defaults: { socket: { reconnectStrategy: () => 50 } },
    });
    c.on('error', () => undefined);
    await c.connect();
    client = c as unknown as RedisClient;
  } else {
    const { GlideClusterClient } = await glide();
    client = (await GlideClusterClient.createClient({
      addresses: nodes,
      requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
    })) as unknown as RedisClient;
  }
  storeClients.add(client);
  return client;
}

/*
 * Above the largest timeoutMs any test gives a limiter (10 s): at or below it, core rightly warns at every
 * limiter's construction that GLIDE's own timeout would cut checks short (docs/clients.md).
 */
const GLIDE_REQUEST_TIMEOUT_MS = 30_000;

/** Closes a client of any library now, without waiting for a server that may be gone. */
export async function closeStoreClient(client: object): Promise<void> {
  storeClients.delete(client);
  const c = client as { disconnect?(): unknown; destroy?(): unknown; close?(): unknown; isOpen?: boolean; status?: string };
  try {
    if (typeof c.status === 'string') c.disconnect?.();
    else if (typeof c.isOpen === 'boolean') {
      if (c.isOpen) await Promise.resolve(c.destroy?.());
    } else c.close?.();
  } catch {
    // already closed
  }
}

/** A unique key prefix per test file or test, so files run in parallel without FLUSHALL. */
export function uniquePrefix(label = 't'): string {
  return `${label.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 12)}-${randomBytes(4).toString('hex')}`;
}

/** The keys under `<prefix>:` (SCAN MATCH: never KEYS, which the shared test server refuses and a user's REDIS_URL may hold). */
export async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found;
}

/** Counts scripts and plain commands sent over the wire, from INFO commandstats on a private server. */
export async function commandStats(client: Redis): Promise<Record<string, number>> {
  const info = await client.info('commandstats');
  const out: Record<string, number> = {};
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}
