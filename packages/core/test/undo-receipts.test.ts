import { fixedWindow } from '../src/algorithms/fixed-window';
import { slidingWindow } from '../src/algorithms/sliding-window';
import { slidingLog } from '../src/algorithms/sliding-log';
import { tokenBucket } from '../src/algorithms/token-bucket';
import type { Algorithm, FrameContext } from '../src/algorithms/types';
import { runFrame, type Reply } from '../src/algorithms/frame';
import { ClusterStore } from '../src/stores/cluster';
import { MemoryStore } from '../src/stores/memory';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * Undo receipts (DESIGN.md invariant 2) on one Redis: ClusterStore works on a plain client too, where a
 * check never splits, so these drive its receipts and undo script directly. Every step also runs through
 * the JavaScript twins on a memory store with the same clock: the same replies, the same receipt text,
 * the same give-back.
 */
afterAll(closeClients);

const T0 = Date.UTC(2030, 0, 1, 0, 0, 30);
const PAD = 600_000;

/** Two rules per algorithm: (1 min, 5) and (1 h, 10), with each algorithm's parameter. */
const CASES: Array<[string, Algorithm, number[], string]> = [
  // the window index per distinct window
  ['fixed-window', fixedWindow, [60_000, 5, 0, 3_600_000, 10, 0], `60000:${Math.floor(T0 / 60_000)},3600000:${Math.floor(T0 / 3_600_000)}`],
  // the bucket per ring (W:P)
  ['sliding-window', slidingWindow, [60_000, 5, 6, 3_600_000, 10, 10], `60000:6:${Math.floor(T0 / 10_000)},3600000:10:${Math.floor(T0 / 360_000)}`],
  // the timestamp and how many entries
  ['sliding-log', slidingLog, [60_000, 5, 0, 3_600_000, 10, 0], `${T0}:1`],
  // per field W:L:C the increment in ticks (1/L ms; one unit is W ticks) and the TAT it left (ms:ticks)
  ['token-bucket', tokenBucket, [60_000, 5, 5, 3_600_000, 10, 10], `60000:5:5:60000:${T0 + 12_000}:0,3600000:10:10:3600000:${T0 + 360_000}:0`],
];

/** One identifier's key on Redis (Lua) and in memory (JS twins), driven in lockstep. */
function twins(algorithm: Algorithm, rules: number[]) {
  const redis = new ClusterStore(connect());
  const memory = new MemoryStore();
  const key = `${uniquePrefix('undo')}:${algorithm.tag}:{u}`;
  const keys = [key, `${key}:b`];
  const nr = rules.length / 3;
  const pick = (k: number) => rules.filter((_, i) => i % 3 === k);
  const F = pick(0).map((w, j) => algorithm.field({ windowMs: w, limit: pick(1)[j]!, burst: pick(2)[j]!, precision: pick(2)[j]! }));
  const ctxAt = (now: number): FrameContext => ({ now, pad: PAD, W: pick(0), L: pick(1), P: pick(2), F });
  const js = [...Array(nr).keys()];
  const ruleArgv = pick(0).flatMap((w, j) => [w, pick(1)[j]!, pick(2)[j]!, F[j]!]);
  const argv = (op: string, now: number, cost: number) => [op, cost, '0', String(now), PAD, nr, ...ruleArgv, '1'.repeat(nr)];

  /** Runs op on both; the Lua reply must be the twin's plus, when consumed, the twin's receipt. */
  async function run(op: 'c' | 'p', now: number, cost: number): Promise<{ reply: Reply; receipt: string }> {
    const st = algorithm.twin.load(memory.get(key, now), ctxAt(now));
    for (const j of js) algorithm.twin.commit(st, j, cost, ctxAt(now));
    const jsReceipt = algorithm.undo.twin.receipt(st, js, ctxAt(now));
    const lua = await redis.runSlot(algorithm, keys, argv(op, now, cost));
    const reply = runFrame(algorithm.twin, memory, keys, argv(op, now, cost), now);
    expect(lua.slice(0, reply.length)).toEqual(reply);
    expect(lua.slice(reply.length)).toEqual(reply[2] === 1 ? [jsReceipt] : []);
    return { reply, receipt: reply[2] === 1 ? jsReceipt : '' };
  }

  return {
    key,
    check: (now: number, cost: number) => run('c', now, cost),
    /** Per rule [available, resetMs, retryMs] for a cost of 1, after both agreed. */
    peek: async (now: number) => (await run('p', now, 1)).reply.slice(5),
    /** The undo script on Redis (1 when it ran, 0 when that id already had), the JS twin in memory. */
    async undo(now: number, receipt: string, cost: number, id: string): Promise<number> {
      const ran = await redis.giveBack(algorithm, [key], [receipt], cost, id);
      if (ran === 1) algorithm.undo.twin.undo(memory.get(key, now) as never, receipt, cost);
      return ran;
    },
  };
}

const available = (evals: Reply) => evals.filter((_, i) => i % 3 === 0);

describe.each(CASES)('%s', (_name, algorithm, rules, first) => {
  test('a consuming check returns a receipt per identifier, the same text as the JS twin; a denied one none', async () => {
    const t = twins(algorithm, rules);
    expect((await t.check(T0, 1)).receipt).toBe(first);
    expect((await t.check(T0 + 1_234, 2)).receipt).not.toBe('');
    expect((await t.check(T0 + 75_000, 3)).receipt).not.toBe('');
    const denied = await t.check(T0 + 75_000, 50);
    expect(denied.reply[2]).toBe(0);
  });

  test('undo gives back exactly the cost, once per undo id', async () => {
    const t = twins(algorithm, rules);
    await t.check(T0, 1);
    const before = await t.peek(T0);
    const { receipt } = await t.check(T0, 3);
    expect(available(await t.peek(T0))).not.toEqual(available(before));
    expect(await t.undo(T0, receipt, 3, 'id-1')).toBe(1);
    expect(await t.peek(T0)).toEqual(before);
    expect(await t.undo(T0, receipt, 3, 'id-1')).toBe(0);
    expect(await t.peek(T0)).toEqual(before);
  });

  test('an undo of a key that expired or was reset writes nothing', async () => {
    const t = twins(algorithm, rules);
    const { receipt } = await t.check(T0, 2);
    await connect().del(t.key);
    expect(await t.undo(T0, receipt, 2, 'id-gone')).toBe(1);
    expect(await connect().exists(t.key)).toBe(0);
  });
});

test('fixed-window: undo only applies while its window is current', async () => {
  const t = twins(fixedWindow, CASES[0]![2]);
  const { receipt } = await t.check(T0, 2);
  // A minute later: the 1-minute window has moved on and counts 1 there; the hour window still holds 3.
  await t.check(T0 + 60_000, 1);
  expect(await t.undo(T0 + 60_000, receipt, 2, 'id-2')).toBe(1);
  expect(available(await t.peek(T0 + 60_000))).toEqual([4, 9]);
});

test('sliding-window: undo applies while the ring still holds the bucket, not once its slot was reused', async () => {
  const t = twins(slidingWindow, CASES[1]![2]);
  // 10 s buckets in a ring of 7 slots for the minute; 6-minute buckets for the hour.
  const old = await t.check(T0, 2);
  await t.check(T0 + 20_000, 1);
  expect(await t.undo(T0 + 20_000, old.receipt, 2, 'id-3')).toBe(1);
  expect(available(await t.peek(T0 + 20_000))).toEqual([4, 9]);
  const moved = await t.check(T0 + 20_000, 2);
  // 70 s later the minute ring's slot holds a new bucket (its count is the new check's); the hour's does not.
  await t.check(T0 + 90_000, 1);
  expect(available(await t.peek(T0 + 90_000))).toEqual([4, 6]);
  expect(await t.undo(T0 + 90_000, moved.receipt, 2, 'id-4')).toBe(1);
  expect(available(await t.peek(T0 + 90_000))).toEqual([4, 8]);
});

test('token-bucket: undo applies only while the TAT is the one the check left (undos unwind as a stack)', async () => {
  const t = twins(tokenBucket, CASES[3]![2]);
  const x = await t.check(T0, 2);
  const y = await t.check(T0 + 1, 1);
  const afterY = await t.peek(T0 + 2);
  // Y moved the TAT on: X's undo gives nothing back (a partial give-back could over-admit; see the file).
  expect(await t.undo(T0 + 2, x.receipt, 2, 'id-5')).toBe(1);
  expect(await t.peek(T0 + 2)).toEqual(afterY);
  // Y is on top: its undo restores X's TAT, and X's undo (a later retry, new id) then applies.
  expect(await t.undo(T0 + 2, y.receipt, 1, 'id-6')).toBe(1);
  expect(available(await t.peek(T0 + 2))).toEqual([3, 8]);
  expect(await t.undo(T0 + 2, x.receipt, 2, 'id-7')).toBe(1);
  expect(available(await t.peek(T0 + 2))).toEqual([5, 10]);
});

test('sliding-log: undo removes the entries of its millisecond, none once they were trimmed', async () => {
  const t = twins(slidingLog, CASES[2]![2]);
  const x = await t.check(T0, 2);
  await t.check(T0 + 1_000, 1);
  expect(await t.undo(T0 + 1_000, x.receipt, 2, 'id-8')).toBe(1);
  expect(available(await t.peek(T0 + 1_000))).toEqual([4, 9]);
  const old = await t.check(T0 + 2_000, 1);
  // An hour later ten new entries fill the log (it keeps the largest limit): the old ones are trimmed.
  await t.check(T0 + 3_700_000, 5);
  await t.check(T0 + 3_760_000, 5);
  const full = await t.peek(T0 + 3_760_000);
  expect(available(full)).toEqual([0, 0]);
  expect(await t.undo(T0 + 3_760_000, old.receipt, 1, 'id-9')).toBe(1);
  expect(await t.peek(T0 + 3_760_000)).toEqual(full);
});

test('token-bucket: a fractional emission interval (W / L ms) is given back to the tick', async () => {
  const t = twins(tokenBucket, [1_000, 3, 3]);
  await t.check(T0, 1);
  const before = await t.peek(T0 + 1);
  // TAT T0 + 333 ms + 1 tick, then 2 units of 1000 ticks: the undo borrows a tick from the milliseconds.
  const { receipt } = await t.check(T0 + 1, 2);
  expect(receipt).toBe(`1000:3:3:2000:${T0 + 1_000}:0`);
  expect(await t.undo(T0 + 1, receipt, 2, 'id-10')).toBe(1);
  expect(await t.peek(T0 + 1)).toEqual(before);
  expect(await connect().hget(t.key, '1000:3:3')).toBe(`${T0 + 333}:1`);
});
