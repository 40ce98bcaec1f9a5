import { randomBytes } from 'node:crypto';
import Redis, { type RedisOptions } from 'ioredis';

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
  await Promise.all(all.map((c) => (c.status === 'ready' ? c.quit().catch(() => c.disconnect()) : c.disconnect())));
}

/** A unique key prefix per test file or test, so files run in parallel without FLUSHALL. */
export function uniquePrefix(label = 't'): string {
  return `${label.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 12)}-${randomBytes(4).toString('hex')}`;
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
