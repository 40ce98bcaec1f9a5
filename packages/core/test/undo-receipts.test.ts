import { fixedWindow } from '../src/algorithms/fixed-window';
import type { FrameContext } from '../src/algorithms/types';
import { ClusterStore } from '../src/stores/cluster';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * Undo receipts (DESIGN.md invariant 2) on one Redis: ClusterStore works on a plain client too, where a
 * check never splits, so these drive its receipts and undo script directly.
 */
afterAll(closeClients);

const T0 = Date.UTC(2030, 0, 1, 0, 0, 30);
const rules = [2, 60_000, 5, 0, 3_600_000, 10, 0];
const argvAt = (now: number, cost = 1) => ['c', cost, '0', String(now), 600_000, ...rules, '11'];

function setup() {
  const store = new ClusterStore(connect());
  const key = `${uniquePrefix('undo')}:fw1:{u}`;
  const keys = [key, `${key}:b`];
  return { store, key, keys };
}

test('a consuming check returns a receipt per identifier, the same text as the JS twin', async () => {
  const { store, keys } = setup();
  const reply = await store.run(fixedWindow, keys, argvAt(T0));
  expect(reply[2]).toBe(1);
  const receipt = reply[reply.length - 1];
  expect(receipt).toBe(`60000:${Math.floor(T0 / 60_000)},3600000:${Math.floor(T0 / 3_600_000)}`);
  const ctx: FrameContext = { now: T0, pad: 0, W: [60_000, 3_600_000], L: [5, 10], P: [0, 0] };
  const st = fixedWindow.twin.load(undefined, ctx);
  fixedWindow.twin.commit(st, 0, 1, ctx);
  fixedWindow.twin.commit(st, 1, 1, ctx);
  expect(fixedWindow.undo!.twin.receipt(st, [0, 1], ctx)).toBe(receipt);
  // A denied check consumes nothing and carries no receipt.
  const denied = await store.run(fixedWindow, keys, argvAt(T0, 50));
  expect(denied[2]).toBe(0);
  expect(denied).toHaveLength(3 + 2 + 6);
});

test('undo gives back exactly the cost, once per undo id', async () => {
  const { store, key, keys } = setup();
  const reply = await store.run(fixedWindow, keys, argvAt(T0, 3));
  const receipt = String(reply[reply.length - 1]);
  expect(await store.giveBack(fixedWindow, [key], [receipt], 3, 'id-1')).toBe(1);
  expect(await store.giveBack(fixedWindow, [key], [receipt], 3, 'id-1')).toBe(0);
  const after = await store.run(fixedWindow, keys, argvAt(T0, 0));
  expect(after.slice(5, 11)).toEqual([5, 0, 0, 10, 0, 0]);
});

test('undo only applies while its window is current: never over-admits in a later window', async () => {
  const { store, key, keys } = setup();
  const reply = await store.run(fixedWindow, keys, argvAt(T0, 2));
  const receipt = String(reply[reply.length - 1]);
  // A minute later: the 1-minute window has moved on and counts 1 there; the hour window still holds 3.
  await store.run(fixedWindow, keys, argvAt(T0 + 60_000, 1));
  expect(await store.giveBack(fixedWindow, [key], [receipt], 2, 'id-2')).toBe(1);
  const after = await store.run(fixedWindow, keys, argvAt(T0 + 60_000, 0));
  expect([after[5], after[8]]).toEqual([4, 9]);
});

test('the JS undo twin gives back the same, only in the current window', () => {
  const stored = new Map([['i60000', 7], ['n60000', 4], ['i3600000', 1], ['n3600000', 2]]);
  fixedWindow.undo!.twin.undo(stored, '60000:7,3600000:0', 3);
  expect(Object.fromEntries(stored)).toEqual({ i60000: 7, n60000: 1, i3600000: 1, n3600000: 2 });
});
