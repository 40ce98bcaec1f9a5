import { fixedWindow } from '../src/scripts/fixed-window';
import { slidingWindow } from '../src/scripts/sliding-window';
import { slidingLog } from '../src/scripts/sliding-log';
import { tokenBucket } from '../src/scripts/token-bucket';
import type { Algorithm, FrameContext } from '../src/scripts/types';
import { runSplitFrame } from '../src/scripts/frame';
import type { Reply, UndoReceipt } from '../src/scripts/reply';
import { createProgram } from '../src/scripts/compiler';
import { bindReceipt, giveBackTwin, newIncarnation } from '../src/scripts/incarnation';
import { ClusterStore } from '../src/stores/cluster';
import { MemoryStore } from '../src/stores/memory';
import { closeClients, connect, storeClient, uniquePrefix } from '@floodgate/testing';
import type { RedisClient } from '../src/stores/clients';

// The store's client is the one under test (FLOODGATE_CLIENT, jest.config.ts); the test's own commands use ioredis.
let client: RedisClient;
beforeAll(async () => {
  client = await storeClient();
});

/*
 * Undo receipts (docs/design.md, section 6) on one Redis: ClusterStore works on a plain client too, where a
 * check never splits, so these drive its split frame and give-back script directly. Every step also runs
 * through the JavaScript twins on a memory store with the same clock: the same replies (runSplitFrame),
 * the same receipt text, the same give-back. The snapshot that follows the receipts in the Lua reply
 * (Redis's own bytes) is checked against Redis itself. Every check brings its incarnation, as a limiter's
 * do: a receipt is bound to the key's (scripts/incarnation.ts).
 */
afterAll(closeClients);

const T0 = Date.UTC(2030, 0, 1, 0, 0, 30);
const PAD = 600_000;

/** Two rules per algorithm: (1 min, 5) and (1 h, 10), with each algorithm's parameter. */
const CASES: Array<[string, Algorithm, number[], string]> = [
  // the window index per distinct window
  ['fixed-window', fixedWindow, [60_000, 5, 0, 3_600_000, 10, 0], `60000:${Math.floor(T0 / 60_000)},3600000:${Math.floor(T0 / 3_600_000)}`],
  // the bucket per ring (W:P)
  [
    'sliding-window',
    slidingWindow,
    [60_000, 5, 6, 3_600_000, 10, 10],
    `60000:6:${Math.floor(T0 / 10_000)},3600000:10:${Math.floor(T0 / 360_000)}`,
  ],
  // the timestamp and how many entries
  ['sliding-log', slidingLog, [60_000, 5, 0, 3_600_000, 10, 0], `${T0}:1`],
  // per field W:L:C the increment in ticks (1/L ms; one unit is W ticks) and the TAT it left (ms:ticks)
  [
    'token-bucket',
    tokenBucket,
    [60_000, 5, 5, 3_600_000, 10, 10],
    `60000:5:5:60000:${T0 + 12_000}:0,3600000:10:10:3600000:${T0 + 360_000}:0`,
  ],
];

/** One identifier's key on Redis (Lua) and in memory (JS twins), driven in lockstep. */
function twins(algorithm: Algorithm, rules: number[]) {
  const redis = new ClusterStore(client);
  const memory = new MemoryStore();
  const key = `${uniquePrefix('undo')}:${algorithm.tag}:{u}`;
  const keys = [key, `${key}:b`];
  const nr = rules.length / 3;
  const pick = (k: number) => rules.filter((_, i) => i % 3 === k);
  // Each case gives (window, limit, parameter) per rule: the parameter is precision for sliding-window and
  // burst for token-bucket; the other takes its default.
  const resolved = pick(0).map((w, j) => ({
    windowMs: w,
    limit: pick(1)[j]!,
    for: undefined,
    burst: algorithm.name === 'token-bucket' ? pick(2)[j]! : pick(1)[j]!,
    precision: algorithm.name === 'sliding-window' ? pick(2)[j]! : 10,
  }));
  const F = resolved.map((r) => algorithm.field(r));
  const ctxAt = (now: number): FrameContext => ({
    now,
    incarnation: undefined,
    pad: PAD,
    window: resolved.map((r) => r.windowMs),
    limit: resolved.map((r) => r.limit),
    burst: resolved.map((r) => r.burst),
    precision: resolved.map((r) => r.precision),
    field: F,
  });
  const js = [...Array(nr).keys()];
  const argv = (op: string, now: number, cost: number) => [op, cost, '0', String(now), PAD, '1'.repeat(nr), newIncarnation()];
  // The split script generated for these rules.
  const program = createProgram(algorithm, resolved);

  /**
   * Runs op on both; the Lua reply must be the twin's, then, when consumed, the snapshot of the key as it
   * was before (type, expiry, items) and the digest of the key as the check left it.
   */
  async function run(op: 'c' | 'p', now: number, cost: number): Promise<Checked> {
    const memoryBefore = memory.get(key, now);
    const st = algorithm.twin.load(memory.get(key, now), ctxAt(now));
    for (const j of js) algorithm.twin.commit(st, j, cost, ctxAt(now));
    const receiptItems = algorithm.undo.twin.receipt(st, js, ctxAt(now));
    const before = await stored(key);
    const args = argv(op, now, cost);
    const lua = await redis.runSlot(program, keys, args);
    const reply = runSplitFrame(algorithm, program.params, memory, keys, args, now);
    expect(lua.slice(0, reply.length)).toEqual(reply);
    if (reply[2] !== 1) {
      expect(lua.slice(reply.length)).toEqual([]);
      return { reply, receipt: '', items: '' };
    }
    // pre, at 0, at COST: three evaluations per rule, then the receipt: the items bound to the key's
    // incarnation, which the first consuming check of the key gave it (its own).
    expect(reply).toHaveLength(5 + 9 * nr + 1);
    const incarnation = algorithm.undo.twin.incarnation(memory.get(key, now) as never);
    expect(incarnation).toMatch(/^\d{16}$/);
    const jsReceipt = bindReceipt(incarnation, receiptItems);
    expect(reply[reply.length - 1]).toBe(jsReceipt);
    const [digest, type, expireAt, n, ...items] = lua.slice(reply.length);
    expect(items).toHaveLength(Number(n));
    expect(digest).toMatch(/^[0-9a-f]{40}$/);
    expect({ type, items }).toEqual({ type: before.type, items: before.items });
    if (before.expireAt < 0) expect(expireAt).toBe(before.expireAt);
    else expect(Math.abs(Number(expireAt) - before.expireAt)).toBeLessThan(250);
    const full = { receipt: jsReceipt, digest: String(digest), type: String(type), expireAt: Number(expireAt), items: items.map(String) };
    return { reply, receipt: jsReceipt, items: receiptItems, full, memoryBefore };
  }

  return {
    key,
    check: (now: number, cost: number) => run('c', now, cost),
    /** The twin's side of a DEL (reset): the memory store forgets the key. */
    forget: () => memory.delete([key]),
    /** Per rule [available, resetMs, retryMs] for a cost of 1, after both agreed. */
    peek: async (now: number) => (await run('p', now, 1)).reply.slice(5),
    /** The give-back with the receipt alone on Redis (it reports 2: the receipt ran), the JS twin in memory. */
    async undo(now: number, receipt: string, cost: number): Promise<void> {
      expect(await redis.giveBack(algorithm, [key], [receipt], cost)).toEqual([2]);
      giveBackTwin(algorithm, memory.get(key, now), receipt, cost);
    },
    /**
     * The give-back with the snapshot: 1 when it restored the snapshot (the twin then restores the value
     * the check loaded), 2 when the receipt ran (the twin then runs its receipt).
     */
    async restore(now: number, checked: Checked, cost: number): Promise<number> {
      const [how] = await redis.giveBack(algorithm, [key], [checked.full!], cost);
      if (how === 1) {
        memory.delete([key]);
        if (checked.memoryBefore !== undefined) memory.set(key, checked.memoryBefore, PAD, now);
      } else giveBackTwin(algorithm, memory.get(key, now), checked.receipt, cost);
      return how!;
    },
  };
}

interface Checked {
  reply: Reply;
  /** The receipt as the script answered it (bound to the key's incarnation), and its items alone. */
  receipt: string;
  items: string;
  /** When the check consumed: its receipt and snapshot, as the split frame returned them. */
  full?: UndoReceipt;
  /** The twin's stored value before the check. */
  memoryBefore?: unknown;
}

/** A key as the split frame snapshots it (items as fg_enc writes them), for comparing with Redis itself. */
/** TIME in ms and the key's PTTL, read together by Redis. */
const EXPIRY =
  "local t = redis.call('TIME') return { tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), redis.call('PTTL', KEYS[1]) }";
async function stored(key: string): Promise<{ type: string; items: string[]; expireAt: number; pttl: number }> {
  const c = connect();
  const type = await c.type(key);
  let raw: Buffer[] = [];
  if (type === 'hash') raw = (await c.callBuffer('HGETALL', key)) as Buffer[];
  else if (type === 'list') raw = await c.lrangeBuffer(key, 0, -1);
  const enc = (b: Buffer) =>
    [...b]
      .map((x) => (/[A-Za-z0-9:.-]/.test(String.fromCharCode(x)) ? String.fromCharCode(x) : `%${x.toString(16).padStart(2, '0')}`))
      .join('');
  // The expiry as the split script reads it (Redis's TIME in ms plus PTTL), in one script: on Redis's clock,
  // whatever this process's scheduling. (Date.now() after a PTTL reply was off by the time between them,
  // which a loaded machine stretched past 358 ms.) The comparisons below allow 250 ms for a Redis that a
  // busy machine pauses between its TIME and its PTTL, both here and in the split script.
  const [clock, pttl] = (await c.eval(EXPIRY, 1, key)) as [number, number];
  return { type, items: raw.map(enc), expireAt: pttl < 0 ? -1 : clock + pttl, pttl };
}

const available = (evals: Reply) => evals.filter((_, i) => i % 3 === 0);

describe.each(CASES)('%s', (_name, algorithm, rules, first) => {
  test('a consuming check returns a receipt per identifier, the same text as the JS twin; a denied one none', async () => {
    const t = twins(algorithm, rules);
    expect((await t.check(T0, 1)).items).toBe(first);
    expect((await t.check(T0 + 1_234, 2)).receipt).not.toBe('');
    expect((await t.check(T0 + 75_000, 3)).receipt).not.toBe('');
    const denied = await t.check(T0 + 75_000, 50);
    expect(denied.reply[2]).toBe(0);
  });

  test('the receipt alone gives back exactly the cost', async () => {
    const t = twins(algorithm, rules);
    await t.check(T0, 1);
    const before = await t.peek(T0);
    const { receipt } = await t.check(T0, 3);
    expect(available(await t.peek(T0))).not.toEqual(available(before));
    await t.undo(T0, receipt, 3);
    expect(await t.peek(T0)).toEqual(before);
  });

  test('the snapshot restores the key exactly (bytes and expiry), and a key that did not exist is deleted', async () => {
    const t = twins(algorithm, rules);
    const first = await t.check(T0, 1);
    expect(first.full).toMatchObject({ type: 'none', items: [], expireAt: -1 });
    expect(await t.restore(T0, first, 1)).toBe(1);
    expect(await connect().exists(t.key)).toBe(0);
    await t.check(T0 + 5, 1);
    await t.check(T0 + 1_500, 2);
    const before = await stored(t.key);
    const third = await t.check(T0 + 70_000, 3);
    expect(await stored(t.key)).not.toEqual(before);
    expect(await t.restore(T0 + 70_000, third, 3)).toBe(1);
    const after = await stored(t.key);
    expect({ ...after, expireAt: 0, pttl: 0 }).toEqual({ ...before, expireAt: 0, pttl: 0 });
    expect(Math.abs(after.expireAt - before.expireAt)).toBeLessThan(250);
    // Redis and the twin still agree.
    await t.peek(T0 + 70_000);
  });

  test('once another check wrote the key, the snapshot is not restored: the receipt runs instead', async () => {
    const t = twins(algorithm, rules);
    await t.check(T0, 1);
    const second = await t.check(T0 + 10, 2);
    await t.check(T0 + 20, 1);
    expect(await t.restore(T0 + 20, second, 2)).toBe(2);
    await t.peek(T0 + 20);
  });

  test('a receipt of the key before a reset gives nothing back to the key a new check made (one millisecond)', async () => {
    const t = twins(algorithm, rules);
    const old = await t.check(T0, 2);
    await connect().del(t.key);
    t.forget();
    // The new key: the same window, bucket, TAT and millisecond as the old receipt names, another incarnation.
    const fresh = await t.check(T0, 2);
    expect(fresh.items).toBe(old.items);
    expect(fresh.receipt).not.toBe(old.receipt);
    const before = await t.peek(T0);
    await t.undo(T0, old.receipt, 2);
    expect(await t.peek(T0)).toEqual(before);
    // Its own receipt still gives back.
    await t.undo(T0, fresh.receipt, 2);
    expect(available(await t.peek(T0))).toEqual([5, 10]);
  });

  test('a give-back of a key that expired or was reset writes nothing', async () => {
    const t = twins(algorithm, rules);
    const checked = await t.check(T0, 2);
    await connect().del(t.key);
    await t.undo(T0, checked.receipt, 2);
    expect(await connect().exists(t.key)).toBe(0);
    expect(await t.restore(T0, checked, 2)).toBe(2);
    expect(await connect().exists(t.key)).toBe(0);
  });
});

test('fixed-window: undo only applies while its window is current', async () => {
  const t = twins(fixedWindow, CASES[0]![2]);
  const { receipt } = await t.check(T0, 2);
  // A minute later: the 1-minute window has moved on and counts 1 there; the hour window still holds 3.
  await t.check(T0 + 60_000, 1);
  await t.undo(T0 + 60_000, receipt, 2);
  expect(available(await t.peek(T0 + 60_000))).toEqual([4, 9]);
});

test('sliding-window: undo applies while the ring still holds the bucket, not once its slot was reused', async () => {
  const t = twins(slidingWindow, CASES[1]![2]);
  // 10 s buckets in a ring of 7 slots for the minute; 6-minute buckets for the hour.
  const old = await t.check(T0, 2);
  await t.check(T0 + 20_000, 1);
  await t.undo(T0 + 20_000, old.receipt, 2);
  expect(available(await t.peek(T0 + 20_000))).toEqual([4, 9]);
  const moved = await t.check(T0 + 20_000, 2);
  // 70 s later the minute ring's slot holds a new bucket (its count is the new check's); the hour's does not.
  await t.check(T0 + 90_000, 1);
  expect(available(await t.peek(T0 + 90_000))).toEqual([4, 6]);
  await t.undo(T0 + 90_000, moved.receipt, 2);
  expect(available(await t.peek(T0 + 90_000))).toEqual([4, 8]);
});

test('token-bucket: undo applies only while the TAT is the one the check left (undos unwind as a stack)', async () => {
  const t = twins(tokenBucket, CASES[3]![2]);
  const x = await t.check(T0, 2);
  const y = await t.check(T0 + 1, 1);
  const afterY = await t.peek(T0 + 2);
  // Y moved the TAT on: X's undo gives nothing back (a partial give-back could over-admit; see the file).
  await t.undo(T0 + 2, x.receipt, 2);
  expect(await t.peek(T0 + 2)).toEqual(afterY);
  // Y is on top: its undo restores X's TAT, and X's undo (a later retry, new id) then applies.
  await t.undo(T0 + 2, y.receipt, 1);
  expect(available(await t.peek(T0 + 2))).toEqual([3, 8]);
  await t.undo(T0 + 2, x.receipt, 2);
  expect(available(await t.peek(T0 + 2))).toEqual([5, 10]);
});

test('sliding-log: undo removes the entries of its millisecond, none once they were trimmed', async () => {
  const t = twins(slidingLog, CASES[2]![2]);
  const x = await t.check(T0, 2);
  await t.check(T0 + 1_000, 1);
  await t.undo(T0 + 1_000, x.receipt, 2);
  expect(available(await t.peek(T0 + 1_000))).toEqual([4, 9]);
  const old = await t.check(T0 + 2_000, 1);
  // An hour later ten new entries fill the log (it keeps the largest limit): the old ones are trimmed.
  await t.check(T0 + 3_700_000, 5);
  await t.check(T0 + 3_760_000, 5);
  const full = await t.peek(T0 + 3_760_000);
  expect(available(full)).toEqual([0, 0]);
  await t.undo(T0 + 3_760_000, old.receipt, 1);
  expect(await t.peek(T0 + 3_760_000)).toEqual(full);
});

test('sliding-log: a snapshot of thousands of entries is restored exactly (in chunks)', async () => {
  const t = twins(slidingLog, [60_000, 2_500, 0, 3_600_000, 3_000, 0]);
  await t.check(T0, 1_300);
  await t.check(T0 + 500, 1_100);
  const before = await stored(t.key);
  // 2,400 entries, then the key's incarnation (negated).
  expect(before.items).toHaveLength(2_401);
  expect(before.items[2_400]).toMatch(/^-\d{16}$/);
  const checked = await t.check(T0 + 1_000, 100);
  expect(await t.restore(T0 + 1_000, checked, 100)).toBe(1);
  const after = await stored(t.key);
  expect(after.items).toEqual(before.items);
  expect(Math.abs(after.expireAt - before.expireAt)).toBeLessThan(250);
  await t.peek(T0 + 1_000);
});

test('token-bucket: a fractional emission interval (W / L ms) is given back to the tick', async () => {
  const t = twins(tokenBucket, [1_000, 3, 3]);
  await t.check(T0, 1);
  const before = await t.peek(T0 + 1);
  // TAT T0 + 333 ms + 1 tick, then 2 units of 1000 ticks: the undo borrows a tick from the milliseconds.
  const { receipt, items } = await t.check(T0 + 1, 2);
  expect(items).toBe(`1000:3:3:2000:${T0 + 1_000}:0`);
  await t.undo(T0 + 1, receipt, 2);
  expect(await t.peek(T0 + 1)).toEqual(before);
  expect(await connect().hget(t.key, '1000:3:3')).toBe(`${T0 + 333}:1`);
});
