import fc from 'fast-check';
import { ACQUIRE_LUA, RELEASE_LUA } from '../src/scripts/lease-script';
import { MemoryLeases } from '../src/engine/concurrency/memory-leases';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * The model check of the lease scripts: random sequences of acquires (of 1 to 3 identifiers), releases
 * (of any lease ever acquired, twice or after expiry included) and clock steps run through the Lua scripts
 * on a real Redis (test clock in ARGV) and through the JavaScript twin (MemoryLeases, same clock). Every
 * reply must be identical, the live leases left in each set must be the same members with the same
 * expiries, and no identifier may ever have more than `max` live leases.
 */
const RUNS = Number(process.env.FLOODGATE_MODEL_RUNS ?? 1000);
const IDS = ['ip:10.0.0.1', 'ip:10.0.0.2', 'user:alice'];
const PAD = 600_000;
const redis = connect();
afterAll(closeClients);

type Op =
  | { op: 'acquire'; ids: string[] }
  | { op: 'release'; which: number }
  | { op: 'advance'; ms: number }
  | { op: 'expiry'; which: number; offset: number; release: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('acquire' as const), ids: fc.subarray(IDS, { minLength: 1, maxLength: 3 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), which: fc.nat(50) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 400 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1_000, max: 5_000 }) }) },
  // To just before, at or just after the expiry of a lease still ahead (where its slot is freed), and
  // maybe its release right then.
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('expiry' as const),
      which: fc.nat(50),
      offset: fc.integer({ min: -1, max: 1 }),
      release: fc.boolean(),
    }),
  },
);

const scenarioArb = fc.record({
  max: fc.integer({ min: 1, max: 3 }),
  leaseMs: fc.constantFrom(1000, 2500),
  ops: fc.array(opArb, { minLength: 5, maxLength: 40 }),
  start: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
});

interface Held {
  id: string;
  keys: string[];
  expiresAt: number;
}

/** The live members of a set in Redis (ZRANGEBYSCORE (now +inf WITHSCORES), as `id=expiry`, sorted. */
function members(flat: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < flat.length; i += 2) out.push(`${flat[i]}=${flat[i + 1]}`);
  return out.sort();
}

function liveInTwin(twin: MemoryLeases, key: string, now: number): string[] {
  const set = twin.read(key, now);
  if (set === undefined) return [];
  return [...set]
    .filter(([, expiry]) => expiry > now)
    .map(([id, expiry]) => `${id}=${expiry}`)
    .sort();
}

test('the acquire and release scripts equal their JavaScript twin, and never hold more than max', async () => {
  await fc.assert(
    fc.asyncProperty(scenarioArb, async ({ max, leaseMs, ops, start }) => {
      const prefix = uniquePrefix('ccmodel');
      const key = (id: string): string => `${prefix}:m:cc1:{${id}}`;
      const twin = new MemoryLeases(100);
      let now = start;
      const leases: Held[] = [];
      // Each step is one round trip: its script call (if any), then the live members of every set, pipelined.
      for (const [step, op] of ops.entries()) {
        if (op.op === 'advance') {
          now += op.ms;
          continue;
        }
        const pipe = redis.pipeline();
        let expected: unknown;
        const release = (lease: Held): void => {
          pipe.eval(RELEASE_LUA, lease.keys.length, ...lease.keys, lease.id, String(now));
          expected = twin.release(lease.keys, lease.id, now);
        };
        if (op.op === 'expiry') {
          const ahead = leases.filter((l) => l.expiresAt + op.offset >= now);
          const lease = ahead[op.which % Math.max(1, ahead.length)];
          if (lease === undefined) continue;
          now = lease.expiresAt + op.offset;
          if (op.release) release(lease);
        } else if (op.op === 'acquire') {
          const keys = op.ids.map(key);
          const id = `lease-${step}`;
          pipe.eval(ACQUIRE_LUA, keys.length, ...keys, id, max, leaseMs, String(now), PAD);
          const js = twin.acquire(keys, id, max, leaseMs, now);
          expected = js;
          if (js[0] === 1) leases.push({ id, keys, expiresAt: now + leaseMs });
        } else if (leases.length > 0) release(leases[op.which % leases.length]!);
        for (const id of IDS) pipe.zrangebyscore(key(id), `(${now}`, '+inf', 'WITHSCORES');
        const replies = (await pipe.exec())!.map(([err, reply]) => {
          if (err) throw err;
          return reply;
        });
        if (expected !== undefined) {
          const lua = replies.shift();
          expect(Array.isArray(expected) ? lua : Number(lua)).toEqual(expected);
        }
        IDS.forEach((id, i) => {
          const live = members(replies[i] as string[]);
          expect(live.length).toBeLessThanOrEqual(max);
          expect(live).toEqual(liveInTwin(twin, key(id), now));
        });
      }
      await redis.del(...IDS.map(key));
    }),
    { numRuns: RUNS },
  );
}, 120_000);
