import { createLimiter, type Limiter } from '@floodgate/core';
import { closeClients, connect, eventually, uniquePrefix } from '@floodgate/testing';

/*
 * docs/security.md, "An override replaced at the rule-set bound": with the 256 rule sets overrides' limits
 * may use all in use, an operator replaces one identifier's override with rules no other override uses
 * (an abusive client cut to 3 an hour). The setting process frees the old set before compiling the new
 * one; every other process must too, whatever the order it rebuilds its table in, and converge on what
 * Redis stores within `refreshMs`. Two limiters of one prefix and name on two clients: two processes.
 */
afterAll(closeClients);

const REFRESH_MS = 100;
const open: Limiter[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});

function processOf(prefix: string, warnings: string[] = []): Limiter {
  const limiter = createLimiter({
    redis: connect(),
    prefix,
    name: 'api',
    algorithm: 'fixed-window',
    failure: 'closed',
    timeoutMs: 5_000,
    limits: { limit: 60, window: '1h' },
    overrides: { refreshMs: REFRESH_MS },
    logger: { warn: (m) => warnings.push(m) },
  });
  open.push(limiter);
  return limiter;
}

/** 256 identifiers, each with rules of its own: every rule set overrides may use is in use. */
async function fill(setter: Limiter): Promise<void> {
  for (let i = 0; i < 256; i++) await setter.overrides.set(`key:${i}`, { limits: { limit: 100 + i, window: '1h' } });
}

/** How many of `n` sequential checks of `id` the limiter admits. */
async function admitted(limiter: Limiter, id: string, n: number): Promise<number> {
  let count = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check(id)).allowed) count++;
  return count;
}

test('a replaced override at the bound: the other process applies the new rules after its refresh (3 of 11, not 11 of 11)', async () => {
  const prefix = uniquePrefix('ov-bound');
  const warnings: string[] = [];
  const setter = processOf(prefix);
  const other = processOf(prefix, warnings);
  await fill(setter);
  await other.overrides.refresh();
  expect((await other.peek('key:0')).limit).toBe(100);
  // The punishment: key:0's override replaced by rules no other override uses (the 257th set, for a process
  // that compiles the new one before freeing the old).
  await setter.overrides.set('key:0', { limits: { limit: 3, window: '1h' } });
  await other.overrides.refresh();
  expect(await admitted(other, 'key:0', 11)).toBe(3);
  expect((await other.peek('key:0')).limit).toBe(3);
  expect(warnings.filter((w) => w.includes('key:0'))).toEqual([]);
  // Every other override still in force there.
  expect((await other.peek('key:255')).limit).toBe(355);
});

test('the refresh timer converges too, within refreshMs, with no unrelated write to move the version', async () => {
  const prefix = uniquePrefix('ov-bound');
  const setter = processOf(prefix);
  const other = processOf(prefix);
  await fill(setter);
  // The other process loads the 256 sets at its first check, then only refreshes on its timer.
  expect((await other.peek('key:0')).limit).toBe(100);
  await setter.overrides.set('key:0', { limits: { limit: 3, window: '1h' } });
  expect(await eventually(async () => (await other.peek('key:0')).limit, 3, REFRESH_MS * 50)).toBe(3);
  expect(await admitted(other, 'key:0', 11)).toBe(3);
});

test('replaced back and forth, by both processes: both apply what Redis stores', async () => {
  const prefix = uniquePrefix('ov-bound');
  const a = processOf(prefix);
  const b = processOf(prefix);
  await fill(a);
  await b.overrides.refresh();
  for (const [setter, reader, limit] of [
    [a, b, 3],
    [b, a, 4],
    [a, b, 100],
    [b, a, 5],
  ] as const) {
    await setter.overrides.set('key:0', { limits: { limit, window: '1h' } });
    await reader.overrides.refresh();
    expect([(await setter.peek('key:0')).limit, (await reader.peek('key:0')).limit]).toEqual([limit, limit]);
  }
});
