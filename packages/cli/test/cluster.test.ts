import { Cluster } from 'ioredis';
import { createLimiter, type Limiter } from '@floodgate/core';
import { indexKey, keySlot, registryKey } from '@floodgate/core/admin';
import { startCluster, uniquePrefix, type ClusterSetup } from '@floodgate/testing';
import { floodgate, floodgateJson, sleep } from './helpers';

/*
 * The command line against the local Cluster (3 masters, 3 replicas): it finds the Cluster behind one
 * node's URL, and reads the per-slot block index on every master.
 */
let setup: ClusterSetup;
let cluster: Cluster;
let url: string;
const quiet = { warn: () => undefined };

beforeAll(async () => {
  setup = await startCluster();
  cluster = new Cluster(setup.startupNodes, { redisOptions: { autoResendUnfulfilledCommands: false } });
  const node = setup.startupNodes[0]!;
  url = `redis://${node.host}:${node.port}`;
}, 60_000);
afterAll(async () => {
  cluster?.disconnect();
  await setup?.stop();
});

/** Identifiers whose keys fall in `n` different slots, owned by different masters where possible. */
function spread(n: number): string[] {
  const ids: string[] = [];
  const slots = new Set<number>();
  for (let k = 0; ids.length < n; k++) {
    const id = `ip:10.1.${k >> 8}.${k & 255}`;
    const band = Math.floor(keySlot(id) / 5462);
    if (slots.has(band) && ids.length < 3) continue;
    slots.add(band);
    ids.push(id);
  }
  return ids;
}

async function registered(prefix: string, n: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await cluster.hlen(registryKey(prefix))) >= n) return;
    await sleep(20);
  }
  throw new Error(`the registry of ${prefix} never held ${n} limiters`);
}

function limiters(prefix: string, colocate = false): { api: Limiter; login: Limiter } {
  const common = { redis: cluster, prefix, logger: quiet, ...(colocate ? { cluster: { colocate: true } } : {}) };
  return {
    api: createLimiter({ ...common, name: 'api', algorithm: 'token-bucket', limits: { limit: 10, window: '1m' } }),
    login: createLimiter({
      ...common,
      name: 'login',
      algorithm: 'sliding-log',
      limits: { limit: 1, window: '1m' },
      lockout: { after: 1, within: '1m', duration: '30m', scope: 'ip' },
    }),
  };
}

test('blocks and lockouts in slots on every master: blocks lists them all; inspect, unblock, top', async () => {
  const prefix = uniquePrefix('clu');
  const { api, login } = limiters(prefix);
  const [a, b, c, d] = spread(4);
  try {
    // A check spanning slots (the split scripts), then a lockout of d and manual blocks of a, b and c.
    expect((await api.check([a!, b!, c!])).allowed).toBe(true);
    await login.check(d!);
    expect(await login.check(d!)).toMatchObject({ allowed: false, blockReason: 'lockout' });
    await registered(prefix, 2);
    for (const [id, reason] of [
      [a, 'scraping'],
      [b, 'abuse'],
      [c, 'fraud'],
    ] as const) {
      const ran = await floodgate(['block', id!, '--for', '1h', '--reason', reason, '--url', url, '--prefix', prefix]);
      expect(ran.code).toBe(0);
    }
    // Each block entered the index of its own slot.
    for (const id of [a, b, c, d]) expect(await cluster.zscore(indexKey(prefix, keySlot(id!)), `${prefix}:!b:{${id}}`)).not.toBeNull();

    const { code, json } = await floodgateJson<{ blocks: { identifier: string; reason: string }[] }>([
      'blocks',
      '--url',
      url,
      '--prefix',
      prefix,
    ]);
    expect(code).toBe(0);
    expect(json.blocks.map((x) => [x.identifier, x.reason])).toEqual([
      [d, 'lockout'],
      [a, 'scraping'],
      [b, 'abuse'],
      [c, 'fraud'],
    ]);

    const inspected = await floodgateJson<{ block: { reason: string }; limiters: { name: string; rules: { remaining: number }[] }[] }>([
      'inspect',
      a!,
      '--url',
      url,
      '--prefix',
      prefix,
    ]);
    expect(inspected.code).toBe(0);
    expect(inspected.json.block.reason).toBe('scraping');
    expect(inspected.json.limiters.map((l) => [l.name, l.rules.map((r) => r.remaining)])).toEqual([['api', [9]]]);

    expect((await floodgate(['unblock', d!, '--url', url, '--prefix', prefix])).code).toBe(0);
    // The lockout and its escalation are gone (a check now would count toward a new one).
    const lifted = await floodgateJson<{ block: unknown; limiters: { name: string; lockout: unknown }[] }>([
      'inspect',
      d!,
      '--url',
      url,
      '--prefix',
      prefix,
    ]);
    expect(lifted.json.block).toBeNull();
    expect(lifted.json.limiters.find((l) => l.name === 'login')?.lockout ?? null).toBeNull();
    const after = await floodgateJson<{ blocks: { identifier: string }[] }>(['blocks', '--url', url, '--prefix', prefix]);
    expect(after.json.blocks.map((x) => x.identifier)).toEqual([a, b, c]);

    await login.close(); // flushes the denial sample
    const top = await floodgateJson<{ top: { identifier: string; denials: number }[] }>(['top', '--url', url, '--prefix', prefix]);
    expect(top.json.top).toEqual([{ identifier: d, denials: 1 }]);
  } finally {
    await api.close();
    await login.close();
  }
});

test('a colocated prefix (cluster: { colocate: true }): its one index, in the prefix slot', async () => {
  const prefix = uniquePrefix('co');
  const { api, login } = limiters(prefix, true);
  try {
    await api.check('user:1');
    await registered(prefix, 1);
    expect((await floodgate(['block', 'user:1', '--for', '10m', '--url', url, '--prefix', prefix])).code).toBe(0);
    expect(await cluster.zrange(`${prefix}:!i:{${prefix}}`, '0', '-1')).toEqual([`${prefix}:!b:{${prefix}}:user:1`]);
    const { json } = await floodgateJson<{ blocks: { identifier: string; reason: string }[] }>([
      'blocks',
      '--url',
      url,
      '--prefix',
      prefix,
    ]);
    expect(json.blocks).toEqual([expect.objectContaining({ identifier: 'user:1', reason: '' })]);
    const table = await floodgate(['blocks', '--url', url, '--prefix', prefix]);
    expect(table.stdout).toMatch(/^user:1\s+-\s+\S+Z\s+(9m \d+s|10m)$/m);
    expect(await api.check('user:1')).toMatchObject({ allowed: false, reason: 'blocked' });
  } finally {
    await api.close();
    await login.close();
  }
});
