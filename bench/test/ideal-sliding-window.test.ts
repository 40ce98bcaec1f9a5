import { idealSlidingWindow } from '../src/lib/ideal-sliding-window';
import { startBenchRedis, type BenchRedis } from '../src/lib/machine';

/*
 * The least a sliding-window check decided in Redis can cost (bench/src/lib/ideal-sliding-window.ts), which
 * bench:script-cost reads Floodgate's script against: it must decide as a sliding window does, or its cost
 * would be the floor of something else. On a real redis-server, at a time given in ARGV[4] as Floodgate's
 * scripts take one, half an hour into an hour, so no window boundary falls between two calls.
 */
let redis: BenchRedis;
beforeAll(async () => {
  redis = await startBenchRedis();
});
afterAll(async () => redis.stop());
beforeEach(() => redis.cli('FLUSHALL'));

const HOUR = 3_600_000;
const T = 1_000 * HOUR + HOUR / 2;
const call = (lua: string, now: number, ...ids: string[]): number[] =>
  redis
    .cli('EVAL', lua, String(2 * ids.length), ...ids.flatMap((id) => [`s:${id}`, `b:${id}`]), 'c', '1', '0', String(now), '0')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);

test('admits up to the limit, then denies with the time until the window moves on', () => {
  const lua = idealSlidingWindow([{ limit: 2, window: '1h' }]);
  expect(call(lua, T, 'a')).toEqual([1, 1, HOUR / 2, 0]);
  expect(call(lua, T + 1, 'a')).toEqual([1, 0, HOUR / 2 - 1, 0]);
  expect(call(lua, T + 2, 'a')).toEqual([0, 0, HOUR / 2 - 2, HOUR / 2 - 2]);
  // One packed string, three doubles a rule, with a TTL of two windows.
  expect(Number(redis.cli('STRLEN', 's:a'))).toBe(24);
  expect(Number(redis.cli('PTTL', 's:a'))).toBeGreaterThan(HOUR);
  // The next window weighs the previous one's 2 by how much of it still overlaps, rounded down as
  // @upstash/ratelimit's sliding window does: 1 at half way, 0 a millisecond later.
  expect(call(lua, T + HOUR, 'a')).toEqual([1, 0, HOUR / 2, 0]);
  expect(call(lua, T + HOUR + 1, 'a')).toEqual([1, 0, HOUR / 2 - 1, 0]);
  expect(call(lua, T + HOUR + 2, 'a')).toEqual([0, 0, HOUR / 2 - 2, HOUR / 2 - 2]);
});

test('checks every rule on every identifier, all or nothing (a denial writes nothing), and a block key denies before any rule', () => {
  const lua = idealSlidingWindow([
    { limit: 3, window: '1s' },
    { limit: 1, window: '1h' },
  ]);
  expect(call(lua, T, 'ip', 'user')[0]).toBe(1);
  // The user's 1 an hour is spent: a new IP with that user is denied, and its own state is left as it was.
  expect(call(lua, T + 1, 'ip2', 'user')[0]).toBe(0);
  expect(redis.cli('EXISTS', 's:ip2').trim()).toBe('0');
  expect(Number(redis.cli('STRLEN', 's:ip'))).toBe(48);
  redis.cli('SET', 'b:ip3', 'x');
  expect(call(lua, T + 2, 'ip4', 'ip3')).toEqual([0, 2]);
});
