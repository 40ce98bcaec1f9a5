import { createLimiter } from '@floodgate/core';
import { closeClients, commandStats, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';
import type Redis from 'ioredis';
import { BATCH_MAX } from '../src/stores/batch';

// Counting commands needs a server of its own: other test files share the global one.
let server: StartedRedis;
let monitorClient: Redis;
let monitor: Redis;
/** Sends the markers settle() waits for (connected before any test clears what the monitor saw). */
let marker: Redis;
const wire: string[] = [];
const insideScripts: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  monitorClient = connect(server.url);
  monitor = await monitorClient.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = String(args[0]).toLowerCase();
    if (command === 'echo' && String(args[1]).startsWith(MARK)) return void marks.get(String(args[1]))?.();
    (source === 'lua' ? insideScripts : wire).push(command);
  });
  marker = connect(server.url);
  await marker.ping();
});
afterAll(async () => {
  // monitor() opens a connection of its own, which closeClients() does not know about.
  monitor.disconnect();
  await closeClients();
  await server.stop();
});

/*
 * MONITOR reports commands in the order Redis ran them: once it has reported a marker sent after the
 * limiter's commands were answered, it has reported all of them (no waiting for its output to arrive).
 */
const MARK = 'round-trips-mark-';
const marks = new Map<string, () => void>();
let marked = 0;
async function settle(): Promise<void> {
  const mark = `${MARK}${++marked}`;
  const seen = new Promise<void>((resolve) => marks.set(mark, resolve));
  await marker.echo(mark);
  await seen;
  marks.delete(mark);
}

test('3 rules x 2 identifiers cost one EVALSHA per check sent alone, one per batch of checks sent together, and nothing else over the wire', async () => {
  const redis = connect(server.url);
  const limiter = createLimiter({
    redis,
    prefix: uniquePrefix('rt'),
    algorithm: 'fixed-window',
    timeoutMs: 5000,
    limits: [
      { limit: 10, window: '1s' },
      { limit: 120, window: '1m' },
      { limit: 240, window: '1h' },
    ],
  });
  await limiter.check(['ip:203.0.113.7', 'user:42']); // first use on this socket: EVAL loads the script
  // ...and the batch script (stores/batch.ts), for checks started together: the first of three leaves alone
  // (nothing in flight), the other two in a batch.
  await Promise.all(Array.from({ length: 3 }, () => limiter.check(['ip:203.0.113.9', 'user:44'])));
  await settle();
  const statsBefore = await commandStats(redis);
  wire.length = 0;
  insideScripts.length = 0;

  const n = 50;
  const decisions = [];
  for (let i = 0; i < n; i++) decisions.push(await limiter.check(['ip:203.0.113.7', 'user:42']));
  await settle();
  const alone = decisions.filter((d) => d.source === 'redis').length;
  expect(wire.filter((c) => c === 'evalsha')).toHaveLength(alone);
  // Started together: at most the tightest rule's 10 in flight at once (engine/inflight.ts), the first alone
  // (nothing in flight: stores/turn-batches.ts), the rest in one batch.
  decisions.push(...(await Promise.all(Array.from({ length: n }, () => limiter.check(['ip:203.0.113.8', 'user:43'])))));
  await settle();

  // 10/s binds: once denied, a client is answered from the local block cache with no command at all.
  const fromRedis = decisions.filter((d) => d.source === 'redis').length;
  const together = fromRedis - alone;
  expect(together).toBeGreaterThan(1);
  expect(decisions.filter((d) => d.source === 'cache').length).toBeGreaterThan(0);
  expect(fromRedis + decisions.filter((d) => d.source === 'cache').length).toBe(2 * n);
  const batches = wire.filter((c) => c === 'evalsha').length - alone;
  expect(batches).toBeGreaterThanOrEqual(Math.ceil(together / BATCH_MAX));
  expect(batches).toBeLessThan(together);
  expect(wire.filter((c) => c !== 'evalsha')).toEqual([]);
  // The script's own commands run inside Redis, not over the wire (INFO commandstats counts both).
  expect(insideScripts.length).toBeGreaterThan(0);
  const statsAfter = await commandStats(redis);
  expect((statsAfter.evalsha ?? 0) - (statsBefore.evalsha ?? 0)).toBe(alone + batches);
  expect((statsAfter.eval ?? 0) - (statsBefore.eval ?? 0)).toBe(0);
  await limiter.close();
});

test('the checks started in one turn of the event loop leave in batches of BATCH_MAX, one write and one EVALSHA each (the first alone, on an idle store)', async () => {
  const redis = connect(server.url);
  const limiter = createLimiter({ redis, prefix: uniquePrefix('rt'), timeoutMs: 5000, limits: { limit: 1_000_000, window: '1m' } });
  await limiter.check('ip:192.0.2.1'); // the script is loaded
  // and the batch script: the first of three leaves alone (nothing in flight), the other two in a batch
  await Promise.all(Array.from({ length: 3 }, () => limiter.check('ip:192.0.2.1')));
  // Count the socket's writes to the kernel (its own _write/_writev; nothing is replaced or faked).
  const socket = (redis as unknown as { stream: { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void } }).stream;
  const writes = { one: 0, many: 0 };
  const { _write, _writev } = socket;
  socket._write = function (this: unknown, ...a: unknown[]) {
    writes.one++;
    return _write.apply(this, a);
  };
  socket._writev = function (this: unknown, ...a: unknown[]) {
    writes.many++;
    return _writev.apply(this, a);
  };
  const reads = async (): Promise<number> => Number(/total_reads_processed:(\d+)/.exec(await redis.info('stats'))![1]);
  const n = 200;
  const before = await reads();
  const stats0 = await commandStats(redis);
  writes.one = 0;
  const decisions = await Promise.all(Array.from({ length: n }, (_, i) => limiter.check([`ip:192.0.2.${i}`, `user:${i}`])));
  const sent = { ...writes };
  const after = await reads();
  const stats1 = await commandStats(redis);
  socket._write = _write;
  socket._writev = _writev;
  expect(decisions.every((d) => d.allowed && d.source === 'redis')).toBe(true);
  // The first check leaves at once, alone (its store had nothing in flight: stores/turn-batches.ts). Each batch
  // of the rest leaves as soon as it is full (Redis starts on it while the rest are being prepared), the last
  // one at the end of the turn: one write and one script call per BATCH_MAX checks, not one per check.
  const batches = 1 + Math.ceil((n - 1) / BATCH_MAX);
  expect(sent.one + sent.many).toBeGreaterThan(1);
  expect(sent.one + sent.many).toBeLessThanOrEqual(batches); // two may share a writev while the first is pending
  expect((stats1.evalsha ?? 0) - (stats0.evalsha ?? 0)).toBe(batches);
  // Redis reads them in a few reads (plus those of the INFO commands), not one read per check.
  expect(after - before).toBeLessThanOrEqual(batches + 2);
  await limiter.close();
});
