import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { freePort, RedisProcess, serverDir, spawnRedis } from './processes';

export const SENTINEL_MASTER = 'floodgate';

export interface SentinelSetup {
  master: RedisProcess;
  replica: RedisProcess;
  sentinels: RedisProcess[];
  /** For ioredis: `new Redis({ sentinels, name: SENTINEL_MASTER })`. */
  sentinelAddresses: { host: string; port: number }[];
  stop(): Promise<void>;
}

async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await ok().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Asks one server something with a short-lived raw client (no retries, no queue). */
export async function ask<T>(port: number, fn: (c: Redis) => Promise<T>): Promise<T> {
  const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await fn(c);
  } finally {
    c.disconnect();
  }
}

/**
 * One master, one replica and three sentinels (quorum 2) from the same redis-server binary, on free
 * loopback ports; resolves once the sentinels know the replica and each other, so a failover can run.
 */
export async function startSentinels(): Promise<SentinelSetup> {
  const master = await spawnRedis();
  const replica = await spawnRedis(['--replicaof', '127.0.0.1', String(master.port)]);
  const sentinels: RedisProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const dir = serverDir('floodgate-sentinel-');
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${master.port} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
        '',
      ].join('\n'),
    );
    const s = new RedisProcess(await freePort(), [conf, '--sentinel'], dir);
    await s.start();
    sentinels.push(s);
  }
  const ready = async (s: RedisProcess): Promise<boolean> => {
    const info = (await ask(s.port, (c) => c.call('SENTINEL', 'MASTER', SENTINEL_MASTER))) as string[];
    const field = (name: string): number => Number(info[info.indexOf(name) + 1]);
    return field('num-slaves') === 1 && field('num-other-sentinels') === 2;
  };
  await until('sentinels to see the replica and each other', async () => (await Promise.all(sentinels.map(ready))).every(Boolean));
  await until('the replica to sync', async () => /master_link_status:up/.test(await ask(replica.port, (c) => c.info('replication'))));
  return {
    master,
    replica,
    sentinels,
    sentinelAddresses: sentinels.map((s) => ({ host: s.host, port: s.port })),
    stop: async () => {
      await Promise.all([master, replica, ...sentinels].map((p) => p.stop()));
    },
  };
}

/** SENTINEL FAILOVER, then waits until every sentinel names the former replica as master. */
export async function forceFailover(setup: SentinelSetup): Promise<void> {
  await ask(setup.sentinels[0]!.port, (c) => c.call('SENTINEL', 'FAILOVER', SENTINEL_MASTER));
  const expected = String(setup.replica.port);
  await until('the failover to complete', async () => {
    const addrs = await Promise.all(
      setup.sentinels.map((s) => ask(s.port, (c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER))),
    );
    return addrs.every((a) => Array.isArray(a) && String(a[1]) === expected);
  });
}
