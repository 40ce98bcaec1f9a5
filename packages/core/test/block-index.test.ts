import fc from 'fast-check';
import { createLimiter, type Limiter } from '@floodgate/core';
import { encodeIdentifier, indexKey, keySlot } from '../src/scripts/keys';
import type { MemoryStore } from '../src/stores/memory';
import { closeClients, connect, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';

/*
 * The block index (docs/design.md, section 7; docs/cli.md): the Lua that block(), a lockout and unblock()
 * run keeps it, and the memory store's JavaScript twin keeps the same index. Random sequences of blocks,
 * unblocks, checks that lock out and clock jumps, on a real Redis and in memory with one test clock: after
 * every step both indexes hold the same entries, and an entry with an end after now exists exactly while
 * its identifier's block does.
 */
afterAll(closeClients);
const redis = connect();
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice', 'user:bob'];

type Op =
  { op: 'block'; id: string; ms: number } | { op: 'unblock'; id: string } | { op: 'check'; id: string } | { op: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('block' as const), id: fc.constantFrom(...IDS), ms: fc.integer({ min: 1, max: 5_000 }) }),
  fc.record({ op: fc.constant('unblock' as const), id: fc.constantFrom(...IDS) }),
  fc.record({ op: fc.constant('check' as const), id: fc.constantFrom(...IDS) }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 4_000 }) }),
);

function make(prefix: string, clock: () => number, onRedis: boolean): Limiter {
  return createLimiter({
    // `failure` and `timeoutMs` are a Redis store's options: the memory store cannot fail.
    ...(onRedis ? { redis, failure: 'closed' as const, ...TEST_DEADLINE } : {}),
    prefix,
    name: 'idx',
    algorithm: 'fixed-window',
    limits: { limit: 1, window: '10s' },
    lockout: { after: 2, within: '10s', duration: '3s', backoff: 2, maxDuration: '10s', scope: ['ip', 'user'] },
    blockCache: false,
    clock,
  });
}

/** The index entries of every identifier's slot, as [block key, end] sorted. */
async function onRedisIndex(prefix: string): Promise<[string, number][]> {
  const keys = [...new Set(IDS.map((id) => indexKey(prefix, keySlot(encodeIdentifier(id)))))];
  const out: [string, number][] = [];
  for (const key of keys) {
    const pairs = (await redis.call('ZRANGE', key, '0', '-1', 'WITHSCORES')) as [string, string][];
    for (const [member, score] of pairs) out.push([member, Number(score)]);
  }
  return out.sort();
}

function inMemoryIndex(store: MemoryStore, prefix: string, now: number): [string, number][] {
  const keys = [...new Set(IDS.map((id) => indexKey(prefix, keySlot(encodeIdentifier(id)))))];
  const out: [string, number][] = [];
  for (const key of keys) {
    const index = store.get(key, now) as Map<string, number> | undefined;
    for (const [member, end] of index ?? []) out.push([member, end]);
  }
  return out.sort();
}

test('random blocks, unblocks and lockouts: the Lua and the twin keep the same exact index', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
      const prefix = uniquePrefix('bi');
      let now = 1_800_000_000_000;
      const clock = (): number => now;
      const onRedis = make(prefix, clock, true);
      const inMemory = make(prefix, clock, false);
      const store = (inMemory as unknown as { store: MemoryStore }).store;
      try {
        for (const op of ops) {
          if (op.op === 'advance') now += op.ms;
          else if (op.op === 'block') for (const l of [onRedis, inMemory]) await l.block(op.id, { duration: op.ms, reason: 'r' });
          else if (op.op === 'unblock') for (const l of [onRedis, inMemory]) await l.unblock(op.id);
          else {
            const [a, b] = [await onRedis.check(op.id), await inMemory.check(op.id)];
            expect(a.allowed).toBe(b.allowed);
          }
          // Both keep the same entries (ended ones included, until a write in their slot trims them).
          const live = (await onRedisIndex(prefix)).filter(([, end]) => end > now);
          expect(live).toEqual(inMemoryIndex(store, prefix, now).filter(([, end]) => end > now));
          // Exact: an entry in force for each block in force, and for nothing else.
          const blocked: [string, number][] = [];
          for (const id of IDS) {
            const value = await redis.get(`${prefix}:!b:{${id}}`);
            const end = value === null ? 0 : Number(value.split('|')[0]);
            if (end > now) blocked.push([`${prefix}:!b:{${id}}`, end]);
          }
          expect(live).toEqual(blocked.sort());
        }
      } finally {
        await onRedis.close();
        await inMemory.close();
      }
    }),
    { numRuns: 30 },
  );
}, 120_000);
