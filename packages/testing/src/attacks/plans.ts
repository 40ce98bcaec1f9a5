import request from 'supertest';
import { createLimiter, type AlgorithmName, type Limiter } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '../clients';
import type { AdapterFactory, AppSpec, NeutralOptions, TestApp } from '../conformance';
import { restDescribe, test } from '../suite-part';

/*
 * docs/security.md, "Plans that forget counts" and "A refund after a reset", over real sockets. Each test
 * failed before its fix (figures in the comments).
 */
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Signed in (the suite's auth stand-in makes the user from x-user) or not: the plan a request gets. */
const planOf = (req: { headers: Record<string, unknown> }): string => (req.headers['x-user'] ? 'member' : 'anon');
const SIGNED_IN = { 'x-user': '42' };
/** A moment 10 s into a minute and an hour, for the tests where time must not move. */
const FROZEN = Date.UTC(2030, 0, 1, 0, 0, 10);

export function plansAttacks(factory: AdapterFactory): void {
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
          const app = await start({ global: planned(algorithm, { limit: 2, window: '1s' }) });
          for (let i = 0; i < 5; i++) expect(await status(app)).toBe(200);
          await sleep(1_100);
          expect(await status(app, SIGNED_IN)).toBe(200);
          // The member's key life is about a second: the anonymous hour's 5 must outlive it.
          await sleep(1_600);
          return [algorithm, [await status(app), await status(app), await status(app)]] as const;
        }),
      );
      // Before: [200, 200, 200] for every algorithm (the hour's count dropped, trimmed or expired).
      expect(Object.fromEntries(results)).toEqual(Object.fromEntries(ALGORITHMS.map((a) => [a, [429, 429, 429]])));
    });

    test('failed requests refunded after an operator reset give the new window nothing: 5 of 5 reach the handler', async () => {
      const results = await Promise.all(
        ALGORITHMS.map(async (algorithm) => {
          const limiter = createLimiter({
            redis,
            prefix: uniquePrefix(`${factory.name}-refund`),
            algorithm,
            refunds: true,
            blockCache: false,
            limits: { limit: 5, window: '1h' },
          });
          limiters.push(limiter);
          let refunded = 0;
          limiter.subscribe((e) => void (e.type === 'refund' && refunded++));
          const app = await start({ global: { limiter, skipFailedRequests: true, identify: () => 'client:1' } as NeutralOptions });
          // 5 slow requests that will fail: admitted now, refunded when their 500 is sent.
          // Settled, never rejected: a failed assertion below must not leave a rejection behind when the app closes.
          const slow = Promise.allSettled(
            Array.from({ length: 5 }, () => request(app.url).get('/').set({ 'x-status': '500', 'x-delay': '600' })),
          );
          for (let waited = 0; app.hits() < 5 && waited < 5_000; waited += 10) await sleep(10);
          expect(app.hits()).toBe(5);
          // `floodgate reset client:1` (or the application's own reset) while they are in flight.
          await limiter.reset('client:1');
          const fresh: number[] = [];
          for (let i = 0; i < 5; i++) fresh.push(await status(app));
          expect((await slow).map((r) => (r.status === 'fulfilled' ? r.value.status : r.reason))).toEqual([500, 500, 500, 500, 500]);
          for (let waited = 0; refunded < 5 && waited < 5_000; waited += 10) await sleep(10);
          expect(refunded).toBe(5);
          for (let i = 0; i < 5; i++) fresh.push(await status(app));
          return [algorithm, fresh.filter((s) => s === 200).length] as const;
        }),
      );
      // Before: fixed and sliding window 10 (each refund gave a unit to the window the reset began).
      expect(Object.fromEntries(results)).toEqual(Object.fromEntries(ALGORITHMS.map((a) => [a, 5])));
    });
  });
}
