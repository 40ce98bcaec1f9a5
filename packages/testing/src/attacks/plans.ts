import request from 'supertest';
import { createLimiter, type AlgorithmName, type Limiter } from '@floodgate/core';
import { manualClock, settled } from '@floodgate/core/testing';
import { closeClients, connect, keysUnder, uniquePrefix } from '../clients';
import type { AdapterFactory, AppSpec, NeutralOptions, TestApp } from '../conformance';
import { gate } from '../held';
import { restDescribe, test } from '../suite-part';
import { deadlineFactory, TEST_DEADLINE } from '../deadline';

/*
 * docs/security.md, "Plans that forget counts" and "A refund after a reset", over real sockets. Each test
 * failed before its fix (figures in the comments).
 */
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];

/** Signed in (the suite's auth stand-in makes the user from x-user) or not: the plan a request gets. */
const planOf = (req: { headers: Record<string, unknown> }): string => (req.headers['x-user'] ? 'member' : 'anon');
const SIGNED_IN = { 'x-user': '42' };
/** A moment 10 s into a minute and an hour, for the tests where time must not move. */
const FROZEN = Date.UTC(2030, 0, 1, 0, 0, 10);

export function plansAttacks(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  restDescribe(`${factory.name}: plans and refunds (docs/security.md)`, () => {
    // Made when this block starts: the suite before it closes every client when it ends.
    let redis: ReturnType<typeof connect>;
    beforeAll(() => {
      redis = connect();
    });
    const apps: TestApp[] = [];
    const limiters: Limiter[] = [];
    const start = async (spec: AppSpec): Promise<TestApp> => {
      const app = await factory.makeApp(spec);
      apps.push(app);
      return app;
    };
    /** A limiter whose plan follows signing in: 5 an hour anonymous, `member` signed in; block cache off. */
    const planned = (algorithm: AlgorithmName, member: { limit: number; window: string }, clock?: () => number): NeutralOptions =>
      ({
        redis,
        prefix: uniquePrefix(`${factory.name}-plans`),
        algorithm,
        blockCache: false,
        limits: { anon: [{ limit: 5, window: '1h' }], member: [member] },
        plan: planOf,
        // A loaded machine may take longer than the default deadline: the failure policy would answer, not the count.
        timeoutMs: 10_000,
        ...(clock ? { clock } : {}),
      }) as NeutralOptions;
    const status = async (app: TestApp, set: Record<string, string> = {}): Promise<number> =>
      (await request(app.url).get('/').set(set)).status;

    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await Promise.all(limiters.splice(0).map((l) => l.close()));
    });
    afterAll(closeClients);

    test('signing in and out on every one of 300 requests: 5 anonymous requests an hour reach the handler', async () => {
      const results = await Promise.all(
        ALGORITHMS.map(async (algorithm) => {
          // Time stands still (a test clock): a fixed window's minute (or hour) may not turn during the run and
          // hand out a second window's budget, which is no forgetting.
          const app = await start({ global: planned(algorithm, { limit: 100, window: '1m' }, () => FROZEN) });
          const ok = { anon: 0, member: 0 };
          for (let i = 0; i < 300; i++) {
            const member = i % 2 === 1;
            if ((await status(app, member ? SIGNED_IN : {})) === 200) ok[member ? 'member' : 'anon']++;
          }
          expect(app.hits()).toBe(ok.anon + ok.member);
          return [algorithm, ok] as const;
        }),
      );
      for (const [algorithm, ok] of results) {
        // Before (fixed window): 150 of 150 anonymous requests, 250 of 300 in all. Sliding log keeps one log,
        // so the members' entries count toward the anonymous hour too: at most 5.
        if (algorithm === 'sliding-log') expect(ok.anon).toBeLessThanOrEqual(5);
        else expect({ algorithm, anon: ok.anon }).toEqual({ algorithm, anon: 5 });
        expect(ok.member).toBeLessThanOrEqual(100);
      }
    });

    test('a signed-in request with a shorter window and a smaller limit makes the anonymous hour forget nothing', async () => {
      const results = await Promise.all(
        ALGORITHMS.map(async (algorithm) => {
          // The windows on a test clock; the life Redis gives the key (real time) read with PTTL, not waited out.
          const clock = manualClock();
          const options = planned(algorithm, { limit: 2, window: '1s' }, clock.now);
          const app = await start({ global: options });
          for (let i = 0; i < 5; i++) expect(await status(app)).toBe(200);
          clock.advance(1_100);
          expect(await status(app, SIGNED_IN)).toBe(200);
          // The member's window is a second: the anonymous hour's 5 must outlive it. The address's key lives
          // the hour (less the 1.1 s gone by), the test clock's 10 minutes of padding on top.
          const prefix = (options as { prefix: string }).prefix;
          const key = (await keysUnder(redis, prefix)).find((k) => k.endsWith('{ip:127.0.0.1}'));
          const life = key === undefined ? -2 : await redis.pttl(key);
          clock.advance(1_600);
          const after = [await status(app), await status(app), await status(app)];
          return [algorithm, { after, outlivesTheHour: life >= 3_600_000 - 1_100 }] as const;
        }),
      );
      // Before: [200, 200, 200] for every algorithm (the hour's count dropped, trimmed or expired), the key
      // cut to the member's second.
      expect(Object.fromEntries(results)).toEqual(
        Object.fromEntries(ALGORITHMS.map((a) => [a, { after: [429, 429, 429], outlivesTheHour: true }])),
      );
    });

    test('failed requests refunded after an operator reset give the new window nothing: 5 of 5 reach the handler', async () => {
      const results = await Promise.all(
        ALGORITHMS.map(async (algorithm) => {
          const limiter = createLimiter({
            ...TEST_DEADLINE,
            redis,
            prefix: uniquePrefix(`${factory.name}-refund`),
            algorithm,
            refunds: true,
            blockCache: false,
            limits: { limit: 5, window: '1h' },
            // Time stands still: only the reset may begin a new window (a real hour could turn mid-test), and
            // every check falls in one millisecond, as the new checks and old receipts did in the attack.
            clock: () => FROZEN,
          });
          limiters.push(limiter);
          let refunded = 0;
          limiter.subscribe((e) => void (e.type === 'refund' && refunded++));
          const handlers = gate();
          const app = await start({
            global: { limiter, skipFailedRequests: true, identify: () => 'client:1' } as NeutralOptions,
            slow: handlers.slow,
          });
          // 5 requests that will fail, held in their handler: admitted now, refunded when their 500 is sent.
          // Settled, never rejected: a failed assertion below must not leave a rejection behind when the app closes.
          const held = Promise.allSettled(
            Array.from({ length: 5 }, () => request(app.url).get('/').set({ 'x-status': '500', 'x-hold': '1' })),
          );
          await handlers.reached(5);
          expect(app.hits()).toBe(5);
          // `floodgate reset client:1` (or the application's own reset) while they are in flight.
          await limiter.reset('client:1');
          const fresh: number[] = [];
          for (let i = 0; i < 5; i++) fresh.push(await status(app));
          handlers.open();
          expect((await held).map((r) => (r.status === 'fulfilled' ? r.value.status : r.reason))).toEqual([500, 500, 500, 500, 500]);
          // The refunds their 500s set off have reached Redis.
          await settled();
          expect(refunded).toBe(5);
          for (let i = 0; i < 5; i++) fresh.push(await status(app));
          return [algorithm, fresh.filter((s) => s === 200).length] as const;
        }),
      );
      // Before: fixed window, sliding window and sliding log 10, token bucket 6 (each refund gave a unit to
      // the window the reset began, in the same millisecond); on a real clock only the two windows showed it.
      expect(Object.fromEntries(results)).toEqual(Object.fromEntries(ALGORITHMS.map((a) => [a, 5])));
    });
  });
}
