import type { CheckOptions, Decision, Limiter, LimiterOptions } from '@floodgate/core';
import { scripted, uniquePrefix, type ConnectionState, type ScriptedStore } from '@floodgate/testing';
import type { seam } from '@floodgate/core/testing';

/*
 * docs/security.md, "'open' admits no flood": with `failure: 'open'`, a flood of checks from one client in
 * one process is admitted at most its limit, whatever state the store's connection is in and whatever
 * options the limiter has. Each flood is 1,000 checks of one identifier against a limit of 100 per minute,
 * started 5 per turn of the event loop with 1 ms of virtual time between turns (so deadlines fall due in
 * the middle of the flood, as they do on a real server), on a scripted store. The same floods against a real
 * redis-server that is frozen are test/resilience/open-flood.test.ts.
 */
const LIMIT = 100;
const FLOOD = 1_000;
const CLIENT = 'ip:203.0.113.7';
const quiet = { warn: () => undefined };

/** What each variant adds to the limiter, and to each check. */
const variants: Record<string, { options: Partial<LimiterOptions>; check?: CheckOptions }> = {
  plain: { options: {} },
  // Denials never lock the client out within a flood, so the block cache never answers one first.
  lockout: { options: { lockout: { after: 100_000, within: '10m', duration: '15m', scope: ['ip'] } } },
  refunds: { options: { refunds: true } },
  // Every check reaches the store (the block cache is not asked first).
  penalty: { options: { penalty: true } },
  // The flood under a plan that is not the default one.
  plans: {
    options: { limits: { pro: [{ limit: 10 * LIMIT, window: '1m' }], free: [{ limit: LIMIT, window: '1m' }] } },
    check: { plan: 'free' },
  },
};

interface Rig {
  store: ScriptedStore;
  rt: seam.VirtualRuntime;
  limiter: Limiter;
  variant: string;
}

function rig(variant: string, connection: ConnectionState, timeoutMs?: number): Rig {
  const made = scripted(
    {
      prefix: uniquePrefix('open-flood'),
      limits: { limit: LIMIT, window: '1m' },
      logger: quiet,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...variants[variant]!.options,
    },
    connection,
  );
  return { ...made, variant };
}

/** `n` checks of one client, 5 started per turn, 1 ms apart; `during(i)` runs before the i-th. The decisions. */
async function flood({ rt, limiter, variant }: Rig, n = FLOOD, during?: (i: number) => void): Promise<Decision[]> {
  const checks: Promise<Decision>[] = [];
  for (let i = 0; i < n; i++) {
    during?.(i);
    checks.push(limiter.check(CLIENT, variants[variant]!.check));
    if (i % 5 === 4) await rt.advance(1);
  }
  return rt.until(Promise.all(checks));
}

const admitted = (decisions: Decision[]): number => decisions.filter((d) => d.allowed).length;

describe.each(Object.keys(variants))('failure: open, %s', (variant) => {
  test.each([20, undefined])(
    'a client connecting to a paused Redis (timeoutMs %p): the policy admits the limit, and Redis nothing more once it answers',
    async (timeoutMs) => {
      const r = rig(variant, 'connecting', timeoutMs);
      const during = await flood(r);
      r.store.connect();
      r.store.behave({ answer: 1 });
      const after = await flood(r);
      // Before: the back of the flood was admitted again at every deadline (up to 410 of 1,000 while
      // connecting), and Redis, which never counted them, admitted its full limit on top once it answered.
      expect([admitted(during), admitted(after)]).toEqual([LIMIT, 0]);
      // 'open' is still open: the checks it could not ask about were admitted, up to the limit.
      expect(during.filter((d) => d.allowed).every((d) => d.source === 'fallback')).toBe(true);
    },
  );

  test('a client that connects during the flood (timeoutMs 5): the limit across both sides of the connect', async () => {
    const r = rig(variant, 'connecting', 5);
    r.store.behave({ answer: 1 });
    const decisions = await flood(r, FLOOD, (i) => i === 100 && r.store.connect());
    expect(admitted(decisions)).toBeLessThanOrEqual(LIMIT);
    // Both sides admitted some: the policy before the connect, Redis after.
    expect(decisions.some((d) => d.allowed && d.source === 'fallback')).toBe(true);
    expect(decisions.some((d) => d.allowed && d.source === 'redis')).toBe(true);
  });

  test('a connected client, Redis paused in the middle of the flood: nothing admitted past the limit', async () => {
    const r = rig(variant, 'ready', 50);
    r.store.behave({ answer: 1 });
    const before = flood(r, FLOOD / 2, (i) => i === 30 && r.store.behave('hold'));
    const all = [...(await before), ...(await flood(r, FLOOD / 2))];
    // Before (lockout): Redis's denials were not remembered: the policy admitted 329 to 343 of the paused half.
    expect(admitted(all)).toBeLessThanOrEqual(LIMIT);
    expect(all.slice(0, 30).every((d) => d.allowed && d.source === 'redis')).toBe(true);
    expect(all.some((d) => d.allowed && d.source === 'fallback')).toBe(true);
  });

  test('a connected client that used exactly its limit, then Redis paused: nothing more admitted', async () => {
    const r = rig(variant, 'ready');
    r.store.behave({ answer: 1 });
    const used = await flood(r, LIMIT);
    expect(admitted(used)).toBe(LIMIT);
    r.store.behave('hold');
    const during = await flood(r);
    // Before: Redis had denied nothing yet, so nothing in this process knew: 'open' admitted 240 to 737 more.
    expect(admitted(during)).toBe(0);
  });

  test('a connected client (default timeoutMs): exactly the limit, all by Redis', async () => {
    const r = rig(variant, 'ready');
    r.store.behave({ answer: 1 });
    const decisions = await flood(r);
    expect(admitted(decisions)).toBe(LIMIT);
    expect(decisions.filter((d) => d.allowed).every((d) => d.source === 'redis')).toBe(true);
  });
});

describe("what 'open' still admits", () => {
  test('during an outage every client is admitted up to its limit per window, and the window frees it again', async () => {
    const { rt, limiter } = scripted(
      { prefix: uniquePrefix('open-ok'), limits: { limit: 10, window: '1s' }, timeoutMs: 50, logger: quiet },
      'connecting',
    );
    // 200 clients with one request each: all admitted by the policy, as 'open' promises.
    const many = await rt.until(Promise.all(Array.from({ length: 200 }, (_, i) => limiter.check(`ip:10.0.${i >> 8}.${i & 255}`))));
    expect(many.every((d) => d.allowed && d.source === 'fallback')).toBe(true);
    // One client's flood: its limit, then a local denial with the time its window frees it.
    const first = await rt.until(Promise.all(Array.from({ length: 100 }, () => limiter.check(CLIENT))));
    expect(admitted(first)).toBe(10);
    expect(first.filter((d) => !d.allowed).every((d) => d.source === 'local' && d.reason === 'limit' && d.identifier === CLIENT)).toBe(
      true,
    );
    // The next check is denied here at once, with the time its window frees it: the whole second, from the
    // admissions at the deadline.
    const denied = await limiter.check(CLIENT);
    expect(denied).toMatchObject({ allowed: false, source: 'local', reason: 'limit', identifier: CLIENT, retryAfterMs: 1_000 });
    await rt.advance(denied.retryAfterMs);
    const next = await rt.until(Promise.all(Array.from({ length: 100 }, () => limiter.check(CLIENT))));
    expect(admitted(next)).toBe(10);
  });

  test('a client that floods, then sends one check at a time, then Redis pauses: the policy admits it no more than a client that never flooded', async () => {
    // docs/security.md, "Bound left": what Redis admitted a check that ran alone is not noted, flood or no
    // flood before it (noting every later check of a client crowded once cost every check of a long-running
    // process ~2 µs). So in an outage both clients get at most one limit from the policy, the flooding one
    // less what its flood was noted for, and neither more than its limit from the policy in the window.
    const outage = async (floodFirst: number): Promise<[number, number]> => {
      const r = rig('plain', 'ready');
      r.store.behave({ answer: 1 });
      let byRedis = floodFirst === 0 ? 0 : admitted(await flood(r, floodFirst));
      for (let i = floodFirst; i < 80; i++) byRedis += (await r.rt.until(r.limiter.check(CLIENT))).allowed ? 1 : 0;
      r.store.behave('hold');
      return [byRedis, admitted(await flood(r))];
    };
    const [seqRedis, seqPolicy] = await outage(0);
    const [mixRedis, mixPolicy] = await outage(20);
    expect([seqRedis, mixRedis]).toEqual([80, 80]);
    expect(seqPolicy).toBe(LIMIT);
    // The flood's 20 were noted: the policy leaves room for the rest of the limit only.
    expect(mixPolicy).toBe(LIMIT - 20);
  });

  test('what it notes per identifier is bounded by memory.maxKeys', async () => {
    const { limiter } = scripted(
      { prefix: uniquePrefix('open-mem'), memory: { maxKeys: 500 }, limits: { limit: 3, window: '1h' }, logger: quiet },
      'down',
    );
    for (let i = 0; i < 3_000; i++) expect((await limiter.check(`ip:10.1.${i >> 8}.${i & 255}`)).source).toBe('fallback');
    expect((limiter as unknown as { open: { size: number } }).open.size).toBe(500);
  });
});
