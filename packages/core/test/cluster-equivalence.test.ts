import { Cluster, type Redis } from 'ioredis';
import fc from 'fast-check';
import { createLimiter, type AlgorithmName, type Decision, type Limiter, type LimiterOptions, type RuleInput } from '@floodgate/core';
import { keySlot } from '../src/stores/cluster';
import { ask, closeClients, connect, startCluster, uniquePrefix, type ClusterSetup } from '@floodgate/testing';
import { onlyOptionsOf } from './fixtures/rule-options';

/*
 * A check split across Cluster slots against the same check on one Redis: a real local Cluster and the
 * shared test redis-server, two limiters with identical options and one injected clock (so both sides'
 * scripts see the same NOW). After every step the decisions must be equal, and at the end every key
 * left behind must be equal on both sides (type, value bytes, expiry within a few ms): no key may exist
 * on one side only. Then regressions, one per way a split check used to differ from one Redis.
 */
const RUNS = Number(process.env.FLOODGATE_EQUIV_RUNS ?? 100);
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];
const silent = { warn: () => undefined };

let setup: ClusterSetup;
let cluster: Cluster;
const single: Redis = connect();
beforeAll(async () => {
  setup = await startCluster();
  cluster = new Cluster(setup.startupNodes, {
    clusterRetryStrategy: () => 50,
    redisOptions: { autoResendUnfulfilledCommands: false },
  });
  cluster.on('error', () => undefined);
  await new Promise((r) => cluster.once('ready', r));
}, 60_000);
afterAll(async () => {
  cluster?.disconnect();
  await closeClients();
  await setup?.stop();
});

const slotOf = (id: string): number => keySlot(`{${id}}`);

/** An identifier of `kind` whose keys share the slot of `id`'s (two identifiers, one script call). */
function sameSlotAs(id: string, kind: string): string {
  for (let k = 0; ; k++) if (slotOf(`${kind}:s${k}`) === slotOf(id)) return `${kind}:s${k}`;
}

// Five slots among six identifiers (ip:10.0.0.1 and its twin share one), and a kind no rule may name.
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob', 'tenant:t1'];
IDS.push(sameSlotAs(IDS[0]!, 'key'));

interface Side {
  limiter: Limiter;
  redis: Redis | Cluster;
}

/** The same limiter on the Cluster and on one Redis, driven by one clock. */
function pair(options: Omit<LimiterOptions, 'redis' | 'prefix' | 'clock'>, start = 1_800_000_000_000) {
  const prefix = uniquePrefix('eq');
  const clock = { now: start };
  const make = (redis: Redis | Cluster): Side => ({
    redis,
    limiter: createLimiter({
      name: 'eq',
      timeoutMs: 5_000,
      failure: 'closed',
      blockCache: false,
      logger: silent,
      ...options,
      redis,
      prefix,
      clock: () => clock.now,
    }),
  });
  const sides = { cluster: make(cluster), single: make(single) };
  return {
    prefix,
    clock,
    sides,
    /** Runs `fn` on both sides (one after the other) and expects the same decision. */
    async both(fn: (l: Limiter) => Promise<Decision>): Promise<{ cluster: Decision; single: Decision }> {
      const one = await fn(sides.single.limiter);
      const split = await fn(sides.cluster.limiter);
      expect(split.source).toBe('redis');
      expect(one.source).toBe('redis');
      expect(view(split)).toEqual(view(one));
      return { cluster: split, single: one };
    },
    async sameKeys(): Promise<Map<string, StoredKey>> {
      const [a, b] = [await clusterKeys(prefix), await singleKeys(prefix)];
      expect(a.size).toBeGreaterThan(0);
      sameStore(a, b, options.refunds === true);
      return a;
    },
    async close(): Promise<void> {
      await sides.cluster.limiter.close();
      await sides.single.limiter.close();
    },
  };
}

/** What must be equal in two decisions: everything but the source and an error object. */
function view(d: Decision) {
  const { allowed, reason, identifier, limit, windowMs, remaining, resetMs, retryAfterMs, cost, states, blockReason, shadowDenied } = d;
  return { allowed, reason, identifier, limit, windowMs, remaining, resetMs, retryAfterMs, cost, states, blockReason, shadowDenied };
}

interface StoredKey {
  type: string;
  /** The value as hex bytes: hash fields and values in HGETALL order, list entries, or the string. */
  value: string[];
  /** Absolute expiry (Date.now() + PTTL), or PTTL when negative. */
  expiresAt: number;
}

async function scanAll(node: Redis, match: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    out.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return out;
}

async function read(client: Redis | Cluster, key: string): Promise<StoredKey> {
  const type = await client.type(key);
  let raw: Buffer[] = [];
  if (type === 'hash') raw = (await client.callBuffer('HGETALL', key)) as Buffer[];
  else if (type === 'list') raw = await client.lrangeBuffer(key, 0, -1);
  else if (type === 'string') raw = [(await client.getBuffer(key))!];
  const pttl = await client.pttl(key);
  return { type, value: raw.map((b) => b.toString('hex')), expiresAt: pttl < 0 ? pttl : Date.now() + pttl };
}

/** Every key of the prefix on every Cluster master (SCAN per node), read through the Cluster client. */
async function clusterKeys(prefix: string): Promise<Map<string, StoredKey>> {
  const names = (await Promise.all(cluster.nodes('master').map((n) => scanAll(n, `${prefix}:*`)))).flat();
  const out = new Map<string, StoredKey>();
  for (const key of names.sort()) out.set(key, await read(cluster, key));
  return out;
}

async function singleKeys(prefix: string): Promise<Map<string, StoredKey>> {
  const out = new Map<string, StoredKey>();
  for (const key of (await scanAll(single, `${prefix}:*`)).sort()) out.set(key, await read(single, key));
  return out;
}

/*
 * A key's incarnation (src/scripts/incarnation.ts) is a number each side's checks bring, unique per life
 * of the key: the two sides' differ. With refunds both sides' scripts give keys one, so it is compared as
 * present or absent; without, only the split script (whose receipts a give-back runs) gives one, which one
 * Redis's plain script has no use for, so it is left out.
 */
const INCARNATION_HEX = Buffer.from('i').toString('hex');
const NEGATIVE_HEX = Buffer.from('-').toString('hex');

function withoutIncarnation({ type, value }: StoredKey, placeholder: boolean): string[] {
  const mark = placeholder ? ['incarnation'] : [];
  if (type === 'hash') {
    const out: string[] = [];
    for (let k = 0; k < value.length; k += 2) {
      if (value[k] === INCARNATION_HEX) out.push(...mark.map((m) => [value[k]!, m]).flat());
      else out.push(value[k]!, value[k + 1]!);
    }
    return out;
  }
  if (type === 'list' && value.length > 0 && value[value.length - 1]!.startsWith(NEGATIVE_HEX)) return [...value.slice(0, -1), ...mark];
  return value;
}

function sameStore(split: Map<string, StoredKey>, one: Map<string, StoredKey>, refunds: boolean): void {
  expect([...split.keys()]).toEqual([...one.keys()]);
  for (const [key, a] of split) {
    const b = one.get(key)!;
    expect({ key, type: a.type, value: withoutIncarnation(a, refunds) }).toEqual({
      key,
      type: b.type,
      value: withoutIncarnation(b, refunds),
    });
    // Both sides write in the same step, a few ms apart; a missed or extra PEXPIRE is off by far more.
    if (Math.abs(a.expiresAt - b.expiresAt) >= 250) expect({ key, expiresAt: a.expiresAt }).toEqual({ key, expiresAt: b.expiresAt });
  }
}

// ---------------------------------------------------------------------------------------------------
// The differential test

const ruleArb: fc.Arbitrary<RuleInput> = fc
  .record({
    limit: fc.integer({ min: 1, max: 6 }),
    window: fc.constantFrom(500, 1000, 2000, 3000, 60_000),
    kind: fc.constantFrom(undefined, undefined, 'ip', 'user', 'key'),
    burst: fc.integer({ min: 1, max: 8 }),
    precision: fc.constantFrom(1, 2, 4, 5, 10),
  })
  .map(({ kind, ...r }) => (kind === undefined ? r : { ...r, for: kind }));

type Op =
  | { op: 'check' | 'peek'; ids: string[]; cost: number }
  | { op: 'advance'; ms: number }
  | { op: 'block'; id: string; ms: number; reason: string }
  | { op: 'unblock'; id: string }
  | { op: 'reset'; id: string }
  | { op: 'refund'; k: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      op: fc.constant('check' as const),
      ids: fc.shuffledSubarray(IDS, { minLength: 1, maxLength: 4 }),
      cost: fc.integer({ min: 0, max: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('peek' as const),
      ids: fc.shuffledSubarray(IDS, { minLength: 1, maxLength: 4 }),
      cost: fc.integer({ min: 0, max: 4 }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 1_500 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 2_000, max: 120_000 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('block' as const),
      id: fc.constantFrom(...IDS),
      ms: fc.integer({ min: 1, max: 5_000 }),
      reason: fc.constantFrom('', 'abuse'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unblock' as const), id: fc.constantFrom(...IDS) }) },
  // limiter.reset(): a refund of a check before it gives nothing back to the identifier, on both sides.
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), id: fc.constantFrom(...IDS) }) },
  // limiter.refund() of the k-th earlier check (mod their number), on both sides.
  { weight: 2, arbitrary: fc.record({ op: fc.constant('refund' as const), k: fc.nat(40) }) },
);

describe.each(ALGORITHMS)('%s: a split check equals one Redis', (algorithm) => {
  test('random sequences: equal decisions at every step, equal keys at the end', async () => {
    let replayed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(ruleArb, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.constantFrom('enforce' as const, 'shadow' as const),
        fc.array(opArb, { minLength: 5, maxLength: 40 }),
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        fc.boolean(),
        async (limits, penalty, mode, ops, start, refunds) => {
          const p = pair({ algorithm, limits: onlyOptionsOf(algorithm, limits), penalty, mode, refunds }, start);
          const checks: Array<{ cluster: Decision; single: Decision }> = [];
          try {
            // A first check that every identifier passes through, so that the end has keys to compare.
            await p.both((l) => l.check(IDS, { cost: 0 }));
            for (const op of ops) {
              if (op.op === 'advance') p.clock.now += op.ms;
              else if (op.op === 'block') {
                for (const s of Object.values(p.sides)) await s.limiter.block(op.id, { duration: op.ms, reason: op.reason });
              } else if (op.op === 'unblock') {
                for (const s of Object.values(p.sides)) await s.limiter.unblock(op.id);
              } else if (op.op === 'reset') {
                for (const s of Object.values(p.sides)) await s.limiter.reset(op.id);
              } else if (op.op === 'refund') {
                const d = checks[op.k % Math.max(checks.length, 1)];
                if (d === undefined) continue;
                const gave = await p.sides.single.limiter.refund(d.single);
                expect(await p.sides.cluster.limiter.refund(d.cluster)).toBe(gave);
              } else {
                const d = await p.both((l) => l[op.op](op.ids, { cost: op.cost }));
                if (op.op === 'check') checks.push(d);
              }
            }
            await p.both((l) => l.check(IDS, { cost: 1 }));
            const [a, b] = [await clusterKeys(p.prefix), await singleKeys(p.prefix)];
            sameStore(a, b, refunds);
          } finally {
            await p.close();
          }
          replayed++;
        },
      ),
      { numRuns: RUNS },
    );
    expect(replayed).toBeGreaterThanOrEqual(RUNS);
  }, 120_000);
});

describe.each(ALGORITHMS)('%s: concurrent split checks', (algorithm) => {
  test('what is left counted is what the admitted checks consumed (restores and receipts interleaved)', async () => {
    const ids = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob'];
    const l = createLimiter({
      algorithm,
      redis: cluster,
      prefix: uniquePrefix('cc'),
      limits: { limit: 40, window: '1h' },
      timeoutMs: 5_000,
      failure: 'closed',
      blockCache: false,
      logger: silent,
    });
    const calls = Array.from({ length: 200 }, (_, k) => ({ ids: [ids[k % 4]!, ids[(k + 1 + ((k >> 2) % 3)) % 4]!], cost: 1 + (k % 3) }));
    const decisions = await Promise.all(calls.map((c) => l.check(c.ids, { cost: c.cost })));
    expect(decisions.every((d) => d.source === 'redis')).toBe(true);
    expect(decisions.some((d) => !d.allowed)).toBe(true);
    for (const id of ids) {
      const used = calls.reduce((n, c, k) => n + (decisions[k]!.allowed && c.ids.includes(id) ? c.cost : 0), 0);
      const left = (await l.peek(id)).remaining;
      // Token-bucket gives back by receipt only while no later check moved the TAT on: it may under-admit.
      if (algorithm === 'token-bucket') expect(40 - left).toBeGreaterThanOrEqual(used);
      else expect(40 - left).toBe(used);
    }
    await l.close();
  });
});

// ---------------------------------------------------------------------------------------------------
// Regressions: each failed on the code before the fix (see the commit that added this file).

/** The master port serving a slot. */
async function masterOf(slot: number): Promise<number> {
  const slots = await cluster.cluster('SLOTS');
  const range = slots.find(([from, to]) => slot >= from && slot <= to)!;
  return range[2]![1] as number;
}

/** Two identifiers on different masters: A and B. */
async function twoMasters(): Promise<[string, string]> {
  const a = 'user:alice';
  const portA = await masterOf(slotOf(a));
  for (let k = 0; ; k++) {
    const b = `ip:10.1.0.${k}`;
    if ((await masterOf(slotOf(b))) !== portA) return [a, b];
  }
}

const stateKey = (prefix: string, algorithmTag: string, id: string): string => `${prefix}:eq:${algorithmTag}:{${id}}`;

describe('regressions', () => {
  test('penalty: a block in one slot consumes nothing in the other slots', async () => {
    const [a, b] = await twoMasters();
    const p = pair({ algorithm: 'fixed-window', limits: { limit: 5, window: '1m' }, penalty: true });
    try {
      for (const s of Object.values(p.sides)) await s.limiter.block(a, { duration: '1m', reason: 'abuse' });
      const { cluster: d } = await p.both((l) => l.check([a, b], { cost: 2 }));
      expect(d).toMatchObject({ allowed: false, reason: 'blocked', identifier: a, blockReason: 'abuse' });
      expect(await cluster.exists(stateKey(p.prefix, 'fw2', b))).toBe(0);
      await p.both((l) => l.peek(b));
      await p.sameKeys();
    } finally {
      await p.close();
    }
  });

  test('a split denial reports the numbers from before any commit', async () => {
    const [a, b] = await twoMasters();
    const p = pair({ algorithm: 'sliding-window', limits: { limit: 3, window: '1m' } });
    try {
      for (let i = 0; i < 3; i++) await p.both((l) => l.check(a));
      const { cluster: d } = await p.both((l) => l.check([a, b]));
      expect(d).toMatchObject({ allowed: false, reason: 'limit', identifier: a });
      // b's pair as it was: 3 left, nothing to reset (it did consume in its slot, and was given back).
      expect(d.states.find((s) => s.identifier === b)).toMatchObject({ remaining: 3, resetMs: 0, allowed: true });
      await p.sameKeys();
    } finally {
      await p.close();
    }
  });

  test('penalty: a split denial reports what one Redis does (every pair re-evaluated at the cost)', async () => {
    const [a, b] = await twoMasters();
    const p = pair({ algorithm: 'fixed-window', limits: { limit: 3, window: '1m' }, penalty: true });
    try {
      for (let i = 0; i < 3; i++) await p.both((l) => l.check(a));
      await p.both((l) => l.check(b, { cost: 2 }));
      // b has 1 left and admits 1; a denies. One Redis consumes both (penalty) and re-evaluates at cost 1.
      const { cluster: d } = await p.both((l) => l.check([a, b]));
      expect(d.states.find((s) => s.identifier === b)).toMatchObject({ remaining: 0, allowed: false });
      await p.sameKeys();
    } finally {
      await p.close();
    }
  });

  test.each([true, false])('penalty %s: a slot that errors leaves nothing consumed in the others', async (penalty) => {
    const [a, b] = await twoMasters();
    const p = pair({ algorithm: 'fixed-window', limits: { limit: 5, window: '1m' }, penalty });
    try {
      // A real fault in b's slot: its state key holds a string, so its script fails with WRONGTYPE.
      await cluster.set(stateKey(p.prefix, 'fw2', b), 'not a hash');
      const d = await p.sides.cluster.limiter.check([a, b]);
      expect(d).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
      expect(await cluster.exists(stateKey(p.prefix, 'fw2', a))).toBe(0);
    } finally {
      await p.close();
    }
  });

  test.each([true, false])('penalty %s: a slot that times out leaves nothing consumed, even once it answers', async (penalty) => {
    const [a, b] = await twoMasters();
    const p = pair({ algorithm: 'token-bucket', limits: { limit: 5, window: '1m' }, penalty, timeoutMs: 200 });
    try {
      // b's master answers nothing for 1 s: the limiter gives up at 200 ms; b's script runs after the pause.
      await ask(await masterOf(slotOf(b)), (c) => c.call('CLIENT', 'PAUSE', '1000', 'ALL'));
      const d = await p.sides.cluster.limiter.check([a, b]);
      expect(d).toMatchObject({ allowed: false, source: 'fallback', reason: 'store-unavailable' });
      // 'timeout' (silence) or 'overload' (other replies arrived meanwhile): either way the deadline passed.
      expect(['timeout', 'overload']).toContain(d.error?.kind);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await clusterKeys(p.prefix)).toEqual(new Map());
    } finally {
      await p.close();
    }
  });

  test('shadow mode: hammering with would-be denials leaves no key one Redis would not have', async () => {
    const [a, b] = await twoMasters();
    const p = pair({ algorithm: 'fixed-window', limits: { limit: 1, window: '1m' }, mode: 'shadow' });
    try {
      await p.both((l) => l.check(a));
      for (let i = 0; i < 50; i++) {
        const { cluster: d } = await p.both((l) => l.check([a, b]));
        expect(d).toMatchObject({ allowed: true, shadowDenied: true });
      }
      const keys = await p.sameKeys();
      expect([...keys.keys()]).toEqual([stateKey(p.prefix, 'fw2', a)]);
    } finally {
      await p.close();
    }
  });
});
