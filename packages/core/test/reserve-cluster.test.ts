import { Cluster } from 'ioredis';
import { createLimiter, type AlgorithmName } from '@floodgate/core';
import { keySlot } from '../src/stores/cluster';
import { closeClients, startCluster, uniquePrefix, type ClusterSetup } from '@floodgate/testing';

/*
 * Units and reservations on a real local Redis Cluster (3 masters, 3 replicas), with identifiers in three
 * slots: a check with a cost per unit split across slots (the split script, the merge, the give-back of a
 * denial per unit), and a reservation's settle and cancel, one settle script per slot. Each against a
 * limiter of the same options in memory (the twins): the same decisions, the same counts after.
 */
let setup: ClusterSetup;
let client: Cluster;
beforeAll(async () => {
  setup = await startCluster();
  client = new Cluster(setup.startupNodes, { clusterRetryStrategy: () => 50, redisOptions: { autoResendUnfulfilledCommands: false } });
  client.on('error', () => undefined);
  await new Promise((r) => client.once('ready', r));
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await closeClients();
  await setup?.stop();
});

const IDS = ['ip:10.0.0.1', 'user:alice', 'tenant:t1'];
const RULES = [
  { limit: 5, window: '1m' },
  { limit: 100, window: '1m', unit: 'tokens' },
  { limit: 60, window: '1m', unit: 'tokens', for: 'user' },
];

test('the identifiers of the test live in three different slots', () => {
  expect(new Set(IDS.map((id) => keySlot(`{${id}}`))).size).toBe(3);
});

describe.each<AlgorithmName>(['fixed-window', 'sliding-window', 'token-bucket'])('%s', (algorithm) => {
  test('checks with a cost per unit and reservations across slots decide and count as the twins do', async () => {
    const now = 1_700_000_040_000;
    const common = { algorithm, limits: RULES, refunds: true, clock: () => now };
    const onCluster = createLimiter({
      ...common,
      prefix: uniquePrefix('rcl'),
      redis: client,
      failure: 'closed',
      timeoutMs: 5_000,
      blockCache: false,
    });
    const inMemory = createLimiter({ ...common, prefix: uniquePrefix('rcl') });
    const strip = <T extends { source?: unknown }>({ source: _s, ...rest }: T) => rest;
    const both = async (cost: { requests: number; tokens: number }) => {
      const c = await onCluster.check(IDS, { cost });
      expect(strip(c)).toEqual(strip(await inMemory.check(IDS, { cost })));
      return c;
    };
    const peek = async () => {
      const c = await onCluster.peek(IDS, { cost: 0 });
      expect(strip(c)).toEqual(strip(await inMemory.peek(IDS, { cost: 0 })));
      return c.states.map((s) => s.remaining);
    };
    try {
      expect((await both({ requests: 1, tokens: 30 })).allowed).toBe(true);
      // 70 tokens more do not fit the user's 60: denied, and the other slots' commits are given back.
      expect((await both({ requests: 1, tokens: 40 })).allowed).toBe(false);
      expect(await peek()).toEqual([4, 70, 4, 70, 30, 4, 70]);

      const r = await onCluster.reserve(IDS, { cost: { requests: 1, tokens: 20 } });
      const m = await inMemory.reserve(IDS, { cost: { requests: 1, tokens: 20 } });
      expect(strip(r.decision)).toEqual(strip(m.decision));
      expect(await peek()).toEqual([3, 50, 3, 50, 10, 3, 50]);
      // Settled in every slot: 5 tokens back, 2 requests charged past the estimate of 1.
      expect(await r.settle({ requests: 3, tokens: 15 })).toBe(true);
      expect(await m.settle({ requests: 3, tokens: 15 })).toBe(true);
      expect(await r.cancel()).toBe(false);
      expect(await peek()).toEqual([1, 55, 1, 55, 15, 1, 55]);

      const c = await onCluster.reserve(IDS, { cost: { requests: 1, tokens: 10 } });
      expect(await c.cancel()).toBe(true);
      expect(await c.settle({ requests: 1, tokens: 10 })).toBe(false);
      expect((await onCluster.peek(IDS, { cost: 0 })).states.map((s) => s.remaining)).toEqual([1, 55, 1, 55, 15, 1, 55]);
    } finally {
      await onCluster.close();
      await inMemory.close();
    }
  }, 60_000);
});
