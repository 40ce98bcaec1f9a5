import { createClient } from 'redis';
import { GlideClient, Logger, ProtocolVersion } from '@valkey/valkey-glide';
import { createLimiter, type RedisClient } from '@floodgate/core';
import { closeClients, closeStoreClient, spawnRedis, uniquePrefix, type RedisProcess } from '@floodgate/testing';

/*
 * docs/clients.md, "Servers before Redis 6": node-redis and Valkey GLIDE open every connection with
 * `HELLO 3`, which Redis 4 and 5 do not know ("unknown command 'HELLO'"), so they cannot connect there
 * without their RESP2 option. The server here is a real redis-server with HELLO renamed away, which answers
 * as those versions do. Each client connects with the option the page shows, and a limiter on it decides
 * exactly (Floodgate's replies are the same in RESP2 and RESP3: docs/design.md, section 4).
 */
let server: RedisProcess;
let port: number;
beforeAll(async () => {
  Logger.setLoggerConfig('off');
  server = await spawnRedis(['--rename-command', 'HELLO', "''"]);
  port = Number(new URL(server.url).port);
}, 30_000);
afterAll(async () => {
  await closeClients();
  await server.stop();
});

/** A limiter on `redis`: 5 checks of one identifier against 3 a minute, a refund, a block; what it saw. */
async function decides(redis: RedisClient): Promise<unknown> {
  const limiter = createLimiter({
    redis,
    prefix: uniquePrefix('resp2'),
    limits: { limit: 3, window: '1m' },
    refunds: true,
    blockCache: false,
    timeoutMs: 2_000,
  });
  try {
    const checks = [];
    for (let i = 0; i < 5; i++) checks.push(await limiter.check('ip:192.0.2.1'));
    const refunded = await limiter.refund(checks[0]!);
    const left = (await limiter.peek('ip:192.0.2.1')).remaining;
    await limiter.block('ip:192.0.2.2', { duration: '1m', reason: 'resp2' });
    const blocked = await limiter.check('ip:192.0.2.2');
    return {
      allowed: checks.map((d) => d.allowed),
      sources: [...new Set(checks.map((d) => d.source))],
      refunded,
      left,
      blocked: [blocked.reason, blocked.blockReason],
    };
  } finally {
    await limiter.close();
  }
}
const EXACT = { allowed: [true, true, true, false, false], sources: ['redis'], refunded: true, left: 1, blocked: ['blocked', 'resp2'] };

test('node-redis: the default RESP3 handshake is refused; with RESP: 2 it connects and the limiter decides exactly', async () => {
  const plain = createClient({ url: server.url, socket: { reconnectStrategy: false } });
  plain.on('error', () => undefined);
  await expect(plain.connect()).rejects.toThrow(/unknown command 'HELLO'/);

  const redis = createClient({ url: server.url, RESP: 2 });
  redis.on('error', () => undefined);
  await redis.connect();
  try {
    expect(await decides(redis as unknown as RedisClient)).toEqual(EXACT);
  } finally {
    await closeStoreClient(redis);
  }
});

test('Valkey GLIDE: the default RESP3 handshake never completes; with protocol: ProtocolVersion.RESP2 it connects and decides exactly', async () => {
  const addresses = [{ host: '127.0.0.1', port }];
  await expect(GlideClient.createClient({ addresses, requestTimeout: 1_000 })).rejects.toThrow(/Connection error/);

  const redis = await GlideClient.createClient({ addresses, protocol: ProtocolVersion.RESP2, requestTimeout: 5_000 });
  try {
    expect(await decides(redis as unknown as RedisClient)).toEqual(EXACT);
  } finally {
    redis.close();
  }
});
