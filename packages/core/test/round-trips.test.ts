import { createLimiter } from '@floodgate/core';
import { closeClients, commandStats, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';
import type Redis from 'ioredis';

// Counting commands needs a server of its own: other test files share the global one.
let server: StartedRedis;
let monitorClient: Redis;
let monitor: Redis;
const wire: string[] = [];
const insideScripts: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  monitorClient = connect(server.url);
  monitor = await monitorClient.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    (source === 'lua' ? insideScripts : wire).push(String(args[0]).toLowerCase());
  });
});
afterAll(async () => {
  // monitor() opens a connection of its own, which closeClients() does not know about.
  monitor.disconnect();
  await closeClients();
  await server.stop();
});

async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 100));
}

test('3 rules x 2 identifiers cost exactly one EVALSHA per check, and nothing else over the wire', async () => {
  const redis = connect(server.url);
  const limiter = createLimiter({
    redis, prefix: uniquePrefix('rt'), algorithm: 'fixed-window', timeoutMs: 5000,
    limits: [{ limit: 10, window: '1s' }, { limit: 120, window: '1m' }, { limit: 240, window: '1h' }],
  });
  await limiter.check(['ip:203.0.113.7', 'user:42']); // first use on this socket: EVAL loads the script
  await settle();
  const statsBefore = await commandStats(redis);
  wire.length = 0;
  insideScripts.length = 0;

  const n = 50;
  const decisions = [];
  for (let i = 0; i < n; i++) decisions.push(await limiter.check(['ip:203.0.113.7', 'user:42']));
  decisions.push(...(await Promise.all(Array.from({ length: n }, () => limiter.check(['ip:203.0.113.8', 'user:43'])))));
  await settle();

  // 10/s binds: once denied, a client is answered from the local block cache with no command at all.
  const fromRedis = decisions.filter((d) => d.source === 'redis').length;
  expect(decisions.filter((d) => d.source === 'cache').length).toBeGreaterThan(0);
  expect(fromRedis + decisions.filter((d) => d.source === 'cache').length).toBe(2 * n);
  expect(wire.filter((c) => c === 'evalsha')).toHaveLength(fromRedis);
  expect(wire.filter((c) => c !== 'evalsha')).toEqual([]);
  // The script's own commands run inside Redis, not over the wire (INFO commandstats counts both).
  expect(insideScripts.length).toBeGreaterThan(0);
  const statsAfter = await commandStats(redis);
  expect((statsAfter.evalsha ?? 0) - (statsBefore.evalsha ?? 0)).toBe(fromRedis);
  expect((statsAfter.eval ?? 0) - (statsBefore.eval ?? 0)).toBe(0);
  await limiter.close();
});
