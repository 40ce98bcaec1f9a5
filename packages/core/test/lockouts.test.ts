import { Cluster } from 'ioredis';
import type Redis from 'ioredis';
import { ConfigError, createLimiter, type LimiterOptions } from '@floodgate/core';
import { keySlot } from '../src/stores/cluster';
import { indexKey } from '../src/scripts/keys';
import {
  closeClients,
  commandStats,
  connect,
  startCluster,
  startRedis,
  uniquePrefix,
  type ClusterSetup,
  type StartedRedis,
} from '@floodgate/testing';

/*
 * Escalating lockouts (issue 14): decided in the check's own script, visible to block/unblock and the block
 * cache, reported as reason 'blocked' with the lockout's end. Random sequences against the JavaScript twin
 * are in model.test.ts; these are the rules one by one, on Redis, in memory and on a Cluster.
 */
afterAll(closeClients);
const redis = connect();
const T0 = Date.UTC(2030, 0, 1, 0, 0, 10);

function limiter(store: 'redis' | 'memory' | Redis | Cluster, options: Partial<LimiterOptions> = {}, clock?: () => number) {
  return createLimiter({
    prefix: uniquePrefix('lo'),
    algorithm: 'fixed-window',
    limits: { limit: 1, window: '1h' },
    lockout: { after: 2, within: '1m', duration: '10s', backoff: 3, maxDuration: '1m', scope: ['ip', 'user'] },
    blockCache: false,
    // `failure` is a Redis store's option: the memory store cannot fail.
    // The deadline is not the subject: a loaded machine's first connect may take longer than the default.
    ...(store === 'memory' ? {} : { redis: store === 'redis' ? redis : store, failure: 'closed' as const, timeoutMs: 10_000 }),
    ...(clock ? { clock } : {}),
    ...options,
  });
}

describe.each(['redis', 'memory'] as const)('on %s', (store) => {
  test('after `after` denials within `within`: blocked for `duration`, then duration x backoff, up to maxDuration', async () => {
    let now = T0;
    const l = limiter(store, {}, () => now);
    expect((await l.check('ip:1')).allowed).toBe(true);
    expect((await l.check('ip:1')).reason).toBe('limit');
    const locked = await l.check('ip:1');
    expect(locked).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'lockout', identifier: 'ip:1', retryAfterMs: 10_000 });
    now += 5_000;
    expect(await l.peek('ip:1')).toMatchObject({ reason: 'blocked', retryAfterMs: 5_000 });
    // While locked out, checks never reach the rules: they count nothing toward the next lockout.
    for (let k = 0; k < 5; k++) expect((await l.check('ip:1')).reason).toBe('blocked');
    now += 5_000;
    expect((await l.check('ip:1')).reason).toBe('limit');
    expect(await l.check('ip:1')).toMatchObject({ reason: 'blocked', retryAfterMs: 30_000 });
    now += 30_000;
    await l.check('ip:1');
    // 90 s would be next; maxDuration caps it at 60 s.
    expect(await l.check('ip:1')).toMatchObject({ reason: 'blocked', retryAfterMs: 60_000 });
    await l.close();
  });

  test('denials further apart than `within` never add up; peeks and cost 0 never count', async () => {
    let now = T0;
    const l = limiter(store, {}, () => now);
    await l.check('ip:1');
    // Ten denials by the hourly limit, 61 s apart: each 1-minute counting window holds one, so none locks out.
    for (let k = 0; k < 10; k++) {
      expect((await l.check('ip:1')).reason).toBe('limit');
      await l.peek('ip:1');
      await l.check('ip:1', { cost: 0 });
      now += 61_000;
    }
    expect((await l.peek('ip:1')).reason).toBe('limit');
    // Two within the minute do.
    await l.check('ip:1');
    expect((await l.check('ip:1')).reason).toBe('blocked');
    await l.close();
  });

  test('the escalation is forgotten maxDuration after the last lockout ends', async () => {
    let now = T0;
    const l = limiter(store, {}, () => now);
    await l.check('ip:1');
    await l.check('ip:1');
    expect((await l.check('ip:1')).retryAfterMs).toBe(10_000);
    now += 10_000 + 60_000; // the end of the lockout, plus maxDuration
    await l.check('ip:1');
    expect((await l.check('ip:1')).retryAfterMs).toBe(10_000);
    await l.close();
  });

  test('only the identifier whose own rules denied is locked out', async () => {
    const l = limiter(store, {
      limits: [
        { limit: 1, window: '1h', for: 'ip' },
        { limit: 100, window: '1h', for: 'user' },
      ],
    });
    await l.check(['ip:1', 'user:a']);
    await l.check(['ip:1', 'user:a']);
    expect(await l.check(['ip:1', 'user:a'])).toMatchObject({ reason: 'blocked', identifier: 'ip:1' });
    expect((await l.check(['ip:2', 'user:a'])).allowed).toBe(true);
    await l.close();
  });

  test('a lockout is a block: every limiter of the prefix sees it; unblock lifts it and forgets the escalation; reset forgets counted denials', async () => {
    // Real time (no test clock): in memory, only limiters without one share their prefix's store.
    const l = limiter(store);
    const other = createLimiter({
      prefix: l.prefix,
      name: 'other',
      limits: { limit: 100, window: '1h' },
      ...(store === 'redis' ? { redis } : {}),
    });
    await l.check('ip:1');
    await l.check('ip:1');
    await l.check('ip:1');
    expect(await other.check('ip:1')).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'lockout' });
    await l.unblock('ip:1');
    expect((await other.check('ip:1')).allowed).toBe(true);
    // The escalation went with it: the next lockout is the first again.
    await l.check('ip:1');
    expect((await l.check('ip:1')).retryAfterMs).toBe(10_000);
    await l.unblock('ip:1');
    expect((await l.check('ip:1')).reason).toBe('limit');
    await l.reset('ip:1');
    // reset() forgot the counts and the denial counted toward a lockout.
    expect((await l.check('ip:1')).allowed).toBe(true);
    expect((await l.check('ip:1')).reason).toBe('limit');
    expect((await l.check('ip:1')).reason).toBe('blocked');
    await l.close();
    await other.close();
  });
});

test('with the block cache on, every denial still reaches the script to be counted, and the lockout is then answered from the cache', async () => {
  const l = limiter('redis', { blockCache: { max: 100 } });
  await l.check('ip:1');
  await l.check('ip:1');
  expect((await l.check('ip:1')).blockReason).toBe('lockout');
  const cached = await l.check('ip:1');
  expect(cached).toMatchObject({ source: 'cache', reason: 'blocked', blockReason: 'lockout' });
  await l.close();
});

describe('on a private server', () => {
  let server: StartedRedis;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = connect(server.url);
  });
  afterAll(() => server.stop());

  test('the check that locks a client out is one script call; the lockout state is two small keys', async () => {
    const l = limiter(client);
    await l.check('ip:1');
    await l.check('ip:1');
    await client.config('RESETSTAT');
    expect((await l.check('ip:1')).blockReason).toBe('lockout');
    const stats = await commandStats(client);
    expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBe(1);
    const keys = (await client.keys(`${l.prefix}:*`)).sort();
    const index = indexKey(l.prefix, keySlot(`${l.prefix}:!b:{ip:1}`));
    expect(keys).toEqual(
      [
        `${l.prefix}:!b:{ip:1}`,
        index,
        `${l.prefix}:!m:{${l.prefix}}`,
        `${l.prefix}:default:fw2:{ip:1}`,
        `${l.prefix}:default:lo:{ip:1}`,
      ].sort(),
    );
    // The lockout's block entered the block index in the same call, scored by its end.
    const [member, end] = ((await client.call('ZRANGE', index, '0', '-1', 'WITHSCORES')) as [string, string][])[0]!;
    expect(member).toBe(`${l.prefix}:!b:{ip:1}`);
    expect(Number((await client.get(member!))!.split('|')[0])).toBe(Number(end));
    const ttl = await client.pttl(`${l.prefix}:default:lo:{ip:1}`);
    // Kept for the lockout plus maxDuration (the escalation's memory), no longer.
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(70_000);
    await l.close();
  });
});

describe('on a Cluster', () => {
  let setup: ClusterSetup;
  let cluster: Cluster;
  beforeAll(async () => {
    setup = await startCluster();
    cluster = new Cluster(setup.startupNodes, { redisOptions: { autoResendUnfulfilledCommands: false } });
    cluster.on('error', () => undefined);
    await new Promise((r) => cluster.once('ready', r));
  }, 60_000);
  afterAll(async () => {
    cluster?.disconnect();
    await setup?.stop();
  });

  test('a check split across slots locks out the identifier that denied, in its own slot', async () => {
    const ids = ['ip:1', 'user:a'];
    expect(keySlot(`{${ids[0]}}`)).not.toBe(keySlot(`{${ids[1]}}`));
    const l = limiter(cluster, {
      limits: [
        { limit: 1, window: '1h', for: 'ip' },
        { limit: 100, window: '1h', for: 'user' },
      ],
      timeoutMs: 2_000,
    });
    await l.check(ids);
    await l.check(ids);
    expect(await l.check(ids)).toMatchObject({ allowed: false, reason: 'blocked', blockReason: 'lockout', identifier: 'ip:1' });
    expect(await l.peek('ip:1')).toMatchObject({ reason: 'blocked' });
    expect((await l.check('user:a')).allowed).toBe(true);
    await l.close();
  });
});

describe('bad lockout options fail at construction, naming the option', () => {
  test.each([
    [{ after: 0, within: '1m', duration: '1m' }, 'lockout.after'],
    [{ after: 1.5, within: '1m', duration: '1m' }, 'lockout.after'],
    [{ after: 3, duration: '1m' }, 'lockout.within'],
    [{ after: 3, within: '1m', duration: -5 }, 'lockout.duration'],
    [{ after: 3, within: '1m', duration: '1m', backoff: 0.5 }, 'lockout.backoff'],
    [{ after: 3, within: '1m', duration: '1m', backoff: Infinity }, 'lockout.backoff'],
    [{ after: 3, within: '1m', duration: '1h', maxDuration: '1m' }, 'lockout.maxDuration'],
    [{ after: 3, within: '1m', duration: '1m', forever: true }, 'lockout.forever'],
    ['5 strikes', 'lockout'],
  ])('%j', (lockout, option) => {
    let error: unknown;
    try {
      createLimiter({ limits: { limit: 1, window: '1m' }, lockout: lockout as LimiterOptions['lockout'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ option });
  });
});
