import Redis from 'ioredis';
import { createClient } from 'redis';
import { GlideClient } from '@valkey/valkey-glide';
import {
  ConfigError,
  createConcurrencyLimiter,
  createLimiter,
  defineClient,
  type Decision,
  type Limiter,
  type LimiterEvent,
  type LimiterOptions,
  type RedisClient,
} from '@floodgate/core';
import {
  CLIENT_KINDS,
  closeClients,
  closeStoreClient,
  connect,
  spawnRedis,
  startCluster,
  storeClient,
  storeClusterClient,
  uniquePrefix,
  testRedisUrl,
  type ClusterSetup,
  type RedisProcess,
} from '@floodgate/testing';

/*
 * Every client library the client seam knows (stores/clients/), each against a real server: the same
 * limiter on ioredis, iovalkey, node-redis and Valkey GLIDE, single and Cluster. The suites that prove the
 * algorithms (check, algorithms, model, undo receipts, conformance) run once per client through the jest
 * projects of jest.config.ts; this file holds what differs between clients: detection, NOSCRIPT, readiness,
 * the deadline and the breaker on a frozen server, a server that cannot run the scripts, and each client's
 * hazards (node-redis's explicit connect(), GLIDE's in-flight limit).
 */

const quiet = { warn: () => undefined };

function limiterOn(redis: RedisClient, options: Partial<LimiterOptions> = {}) {
  return createLimiter({
    redis,
    prefix: uniquePrefix('cl'),
    limits: { limit: 3, window: '1m' },
    logger: quiet,
    ...options,
  } as LimiterOptions);
}

afterAll(async () => {
  await closeClients();
});

/** Checks every 100 ms until Redis decides again (or 10 s pass): the last decision. */
async function fromRedisAgain(limiter: Limiter, id: string): Promise<Decision> {
  const end = Date.now() + 10_000;
  let d = await limiter.check(id);
  while (d.source !== 'redis' && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    d = await limiter.check(id);
  }
  return d;
}

describe.each(CLIENT_KINDS)('%s', (kind) => {
  let client: RedisClient;
  beforeAll(async () => {
    client = await storeClient(undefined, kind);
  });

  test('a limiter on it decides on Redis: exact limit, multi-identifier checks, peek, refund, block, unblock, reset', async () => {
    const limiter = limiterOn(client, { refunds: true, blockCache: false });
    const first = await limiter.check('ip:1.1.1.1');
    expect(first).toMatchObject({ allowed: true, source: 'redis', remaining: 2 });
    expect((await limiter.check('ip:1.1.1.1')).allowed).toBe(true);
    const third = await limiter.check('ip:1.1.1.1');
    expect(await limiter.refund(third)).toBe(true);
    expect((await limiter.peek('ip:1.1.1.1')).remaining).toBe(1);
    expect((await limiter.check(['ip:1.1.1.1', 'user:a'])).allowed).toBe(true);
    expect(await limiter.check(['ip:1.1.1.1', 'user:a'])).toMatchObject({ allowed: false, source: 'redis' });
    expect((await limiter.peek('user:a')).remaining).toBe(2);
    await limiter.reset('ip:1.1.1.1');
    expect((await limiter.check('ip:1.1.1.1')).remaining).toBe(2);
    await limiter.block('user:b', { duration: 60_000 });
    expect(await limiter.check('user:b')).toMatchObject({ allowed: false, reason: 'blocked' });
    await limiter.unblock('user:b');
    expect((await limiter.check('user:b')).allowed).toBe(true);
    expect((await limiter.health()).status).toBe('ok');
    await limiter.close();
  });

  test('100 concurrent checks against a limit of 10: exactly 10 admitted', async () => {
    const limiter = limiterOn(client, { limits: { limit: 10, window: '1m' } });
    const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.check('ip:2.2.2.2')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.every((d) => d.error === undefined)).toBe(true);
    await limiter.close();
  });

  test('concurrency leases: never more than max held, released leases free their place', async () => {
    const cc = createConcurrencyLimiter({ redis: client, prefix: uniquePrefix('clc'), max: 2, logger: quiet });
    const leases = await Promise.all(Array.from({ length: 10 }, () => cc.lease('ip:3.3.3.3')));
    expect(leases.filter((l) => l.granted)).toHaveLength(2);
    for (const l of leases) await l.release();
    expect((await cc.lease('ip:3.3.3.3')).granted).toBe(true);
    await cc.close();
  });

  describe('on a server of its own', () => {
    let server: RedisProcess;
    let own: RedisClient;
    let admin: Redis;
    beforeAll(async () => {
      server = await spawnRedis();
      own = await storeClient(server.url, kind);
      admin = connect(server.url);
    });
    afterAll(async () => {
      await closeStoreClient(own);
      admin.disconnect();
      await server.stop();
    });

    test('after SCRIPT FLUSH the next check succeeds (NOSCRIPT recovered by EVAL)', async () => {
      const limiter = limiterOn(own, { limits: { limit: 10, window: '1h' } });
      expect((await limiter.check('ip:4.4.4.4')).source).toBe('redis');
      await admin.script('FLUSH');
      expect(await limiter.check('ip:4.4.4.4')).toMatchObject({ allowed: true, source: 'redis', remaining: 8 });
      await limiter.close();
    });

    test('a frozen server: every check settles by its deadline with the policy, the breaker opens, and closes once it answers', async () => {
      const events: LimiterEvent[] = [];
      const limiter = limiterOn(own, { failure: 'closed', timeoutMs: 150, onEvent: (e) => events.push(e), blockCache: false });
      expect((await limiter.check('ip:5.5.5.5')).source).toBe('redis');
      server.freeze();
      try {
        for (let i = 0; i < 6; i++) {
          const t0 = performance.now();
          const d = await limiter.check('ip:5.5.5.5');
          expect(performance.now() - t0).toBeLessThan(1_000);
          expect(d).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
        }
        expect((await limiter.health({ probe: false })).breaker).toBe('open');
        expect(events.some((e) => e.type === 'store-error' && e.error.kind === 'circuit-open')).toBe(true);
      } finally {
        server.thaw();
      }
      expect((await fromRedisAgain(limiter, 'ip:5.5.5.6')).source).toBe('redis');
      expect((await limiter.health({ probe: false })).breaker).toBe('closed');
      await limiter.close();
    });
  });

  test('a killed server is a connection fault (never an error reply), and decisions come back from Redis after its restart', async () => {
    const server = await spawnRedis();
    const own = await storeClient(server.url, kind);
    const limiter = limiterOn(own, { failure: 'closed', timeoutMs: 200, blockCache: false });
    try {
      expect((await limiter.check('ip:6.6.6.1')).source).toBe('redis');
      await server.kill();
      const d = await limiter.check('ip:6.6.6.1');
      expect(d).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
      expect(['unavailable', 'timeout', 'circuit-open']).toContain(d.error?.kind);
      await server.start();
      expect((await fromRedisAgain(limiter, 'ip:6.6.6.2')).source).toBe('redis');
    } finally {
      await limiter.close();
      await closeStoreClient(own);
      await server.stop();
    }
  });

  test.each([
    [
      'an ACL that refuses EVALSHA and EVAL',
      ['--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', '-evalsha', '-eval'],
      /NOPERM|PermissionDenied/,
    ],
    [
      'EVALSHA and EVAL renamed away',
      ['--rename-command', 'EVALSHA', "''", '--rename-command', 'EVAL', 'floodgate-test-eval'],
      /unknown command/i,
    ],
  ])(
    'a server that cannot run the scripts (%s): an "unsupported" error and a warning quoting the server, not "cannot reach"',
    async (_, args, said) => {
      const server = await spawnRedis(args as string[]);
      const own = await storeClient(server.url, kind);
      const warnings: string[] = [];
      const events: LimiterEvent[] = [];
      const limiter = limiterOn(own, { failure: 'open', logger: { warn: (m) => warnings.push(m) }, onEvent: (e) => events.push(e) });
      const d = await limiter.check('ip:6.6.6.6');
      await limiter.check('ip:6.6.6.6');
      expect(d).toMatchObject({ allowed: true, source: 'fallback' });
      expect(d.error?.kind).toBe('unsupported');
      expect(d.error?.message).toMatch(said);
      const errors = events.flatMap((e) => (e.type === 'store-error' ? [e.error.kind] : []));
      expect(errors).toEqual(['unsupported', 'unsupported']);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/cannot run Floodgate's scripts/);
      expect(warnings[0]).toMatch(said);
      expect(warnings[0]).not.toMatch(/could not get an answer/);
      expect((await limiter.health({ probe: false })).status).toBe('down');
      await limiter.close();
      await closeStoreClient(own);
      await server.stop();
    },
  );
});

describe.each(CLIENT_KINDS)('%s Cluster', (kind) => {
  let setup: ClusterSetup;
  let client: RedisClient;
  beforeAll(async () => {
    sharedCluster ??= startCluster();
    setup = await sharedCluster;
    client = await storeClusterClient(setup.startupNodes, kind);
  }, 60_000);

  test('split checks over slots decide as one Redis: exact limit, nothing consumed by a denial, refunds, reset, leases', async () => {
    const limiter = limiterOn(client, { limits: { limit: 5, window: '1m' }, refunds: true, blockCache: false, timeoutMs: 2_000 });
    const ids = ['ip:10.0.0.1', 'user:alice', 'tenant:t1', 'user:bob'];
    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.check(ids)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(decisions.every((d) => d.source === 'redis')).toBe(true);
    // A denied check consumed nothing anywhere: a single identifier has no room left either way.
    expect((await limiter.peek('user:alice')).remaining).toBe(0);
    expect(await limiter.refund(decisions.find((d) => d.allowed)!)).toBe(true);
    expect((await limiter.peek('tenant:t1')).remaining).toBe(1);
    await limiter.reset(ids);
    expect((await limiter.peek(ids)).remaining).toBe(5);
    await limiter.block('user:bob', { duration: 60_000 });
    expect(await limiter.check(ids)).toMatchObject({ allowed: false, reason: 'blocked' });
    expect((await limiter.peek('user:alice')).remaining).toBe(5);
    await limiter.close();
    const cc = createConcurrencyLimiter({ redis: client, prefix: uniquePrefix('clcc'), max: 2, logger: quiet, timeoutMs: 2_000 });
    const leases = await Promise.all(Array.from({ length: 8 }, () => cc.lease(ids)));
    expect(leases.filter((l) => l.granted)).toHaveLength(2);
    for (const l of leases) await l.release();
    expect((await cc.lease(ids)).granted).toBe(true);
    await cc.close();
  });
});

let sharedCluster: Promise<ClusterSetup> | undefined;
afterAll(async () => {
  await (await sharedCluster)?.stop();
});

describe('detection and hazards', () => {
  test('an object that is no client Floodgate knows: a ConfigError naming the supported clients and how to wrap one', () => {
    for (const bad of [{}, { get: () => undefined }, { evalsha: () => undefined }, 'redis://localhost:6379']) {
      let err: unknown;
      try {
        createLimiter({ redis: bad as never, limits: { limit: 1, window: '1s' } });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(/ioredis or iovalkey.*node-redis.*Valkey GLIDE/);
    }
    let err: unknown;
    try {
      createLimiter({ redis: {} as never, limits: { limit: 1, window: '1s' } });
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toMatch(/defineClient\(\{ evalsha\(sha, keys, args\), eval\(script, keys, args\), del\(key\) \}\)/);
  });

  test('detection is by shape, not by class name: a subclass and a renamed class are still recognised', async () => {
    class Mine extends Redis {}
    Object.defineProperty(Mine, 'name', { value: 'SomethingElse' });
    const c = new Mine(connect().options as never);
    c.on('error', () => undefined);
    const limiter = limiterOn(c as unknown as RedisClient);
    expect((await limiter.check('ip:7.7.7.7')).source).toBe('redis');
    await limiter.close();
    c.disconnect();
  });

  test('defineClient(): any client with EVALSHA, EVAL and DEL works, NOSCRIPT falls back to EVAL', async () => {
    const ioredis = connect();
    const sent: string[] = [];
    const wrapped = defineClient({
      evalsha: (sha: string, keys: string[], args: string[]) => {
        sent.push('evalsha');
        return ioredis.evalsha(sha, keys.length, ...keys, ...args);
      },
      eval: (script: string, keys: string[], args: string[]) => {
        sent.push('eval');
        return ioredis.eval(script, keys.length, ...keys, ...args);
      },
      del: (key: string) => ioredis.del(key),
    });
    const limiter = limiterOn(wrapped, { blockCache: false });
    expect(sent).toEqual([]);
    expect((await limiter.check('ip:8.8.8.8')).source).toBe('redis');
    await limiter.check('ip:8.8.8.8');
    await limiter.reset('ip:8.8.8.8');
    expect((await limiter.check('ip:8.8.8.8')).remaining).toBe(2);
    // EVALSHA each time; EVAL only after a NOSCRIPT (the first time the server sees a script).
    expect(sent.filter((s) => s === 'evalsha').length).toBeGreaterThanOrEqual(3);
    expect(sent.filter((s) => s === 'eval').length).toBeLessThanOrEqual(2);
    expect(() => defineClient({ evalsha: () => undefined } as never)).toThrow(/needs a eval\(\) method/);
    await limiter.close();
  });

  test('node-redis that was never connected: every check takes the policy with an error saying to call connect(), warned once', async () => {
    const c = createClient({ url: testRedisUrl() });
    c.on('error', () => undefined);
    const warnings: string[] = [];
    const limiter = limiterOn(c as unknown as RedisClient, { failure: 'closed', logger: { warn: (m) => warnings.push(m) } });
    const d = await limiter.check('ip:9.9.9.9');
    await limiter.check('ip:9.9.9.9');
    expect(d).toMatchObject({ allowed: false, source: 'fallback' });
    expect(d.error?.message).toMatch(/await client\.connect\(\)/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/never connects by itself/);
    await c.connect();
    expect((await limiter.check('ip:9.9.9.9')).source).toBe('redis');
    await limiter.close();
    c.destroy();
  });

  test('node-redis connecting: a check waits for its first connection within the deadline', async () => {
    const c = createClient({ url: testRedisUrl() });
    c.on('error', () => undefined);
    const connecting = c.connect();
    const limiter = limiterOn(c as unknown as RedisClient, { timeoutMs: 2_000 });
    expect((await limiter.check('ip:9.9.9.8')).source).toBe('redis');
    await connecting;
    await limiter.close();
    c.destroy();
  });

  test("GLIDE whose requestTimeout is not above the limiter's timeoutMs: a warning at construction", async () => {
    const url = new URL(testRedisUrl());
    const g = await GlideClient.createClient({ addresses: [{ host: url.hostname, port: Number(url.port) }] });
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) };
    await limiterOn(g as unknown as RedisClient, { logger }).close(); // defaults: 250 ms both
    await limiterOn(g as unknown as RedisClient, { logger, timeoutMs: 200 }).close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/requestTimeout \(250 ms\) is not above the limiter's timeoutMs \(250 ms\)/);
    g.close();
  });

  test('GLIDE with a small in-flight limit: 1,000 concurrent checks against a limit of 100 admit exactly 100, never by the policy', async () => {
    const url = new URL(testRedisUrl());
    const g = await GlideClient.createClient({
      addresses: [{ host: url.hostname, port: Number(url.port) }],
      // The 100 checks in flight at once travel in 7 batches (stores/batch.ts): more than 3 (90% of 4).
      inflightRequestsLimit: 4,
      requestTimeout: 30_000,
    });
    const warnings: string[] = [];
    const limiter = limiterOn(g as unknown as RedisClient, {
      failure: 'open',
      timeoutMs: 10_000,
      limits: { limit: 100, window: '1m' },
      logger: { warn: (m) => warnings.push(m) },
    });
    // Distinct identifiers behind one shared one, so that the units in flight per identifier do not queue them in Floodgate first.
    const decisions = await Promise.all(Array.from({ length: 1_000 }, (_, i) => limiter.check(['tenant:one', `user:${i}`])));
    const admitted = decisions.filter((d) => d.allowed).length;
    expect(decisions.filter((d) => d.source === 'fallback')).toEqual([]);
    expect(admitted).toBe(100);
    expect(warnings.some((w) => /in-flight limit|inflightRequestsLimit/.test(w))).toBe(true);
    await limiter.close();
    g.close();
  });
});

test('the servers are those the run selects: FLOODGATE_REDIS_SERVER (the valkey project: valkey-server) for the shared server and own ones', async () => {
  const binary = process.env.FLOODGATE_REDIS_SERVER ?? 'redis-server';
  const valkey = /valkey/.test(binary);
  const server = await spawnRedis();
  try {
    for (const url of [testRedisUrl(), server.url]) {
      const info = await connect(url).info('server');
      expect(/^valkey_version:/m.test(info)).toBe(valkey);
    }
  } finally {
    await server.stop();
  }
});
