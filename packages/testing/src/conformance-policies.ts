import type Redis from 'ioredis';
import request from 'supertest';
import { createLimiter, type Limiter, type LimiterOptions } from '@floodgate/core';
import { resetWarnings } from '@floodgate/core/adapter';
import { settled } from '@floodgate/core/testing';
import { closeClients, connect, uniquePrefix } from './clients';
import {
  capabilitiesOf,
  denialBodyOf,
  type AdapterFactory,
  type AppSpec,
  type NeutralOptions,
  type NeutralSlowDownOptions,
  type TestApp,
} from './conformance';
import { gate, leavingGet } from './held';
import { liveTimers } from './load';
import { contract, given, restDescribe, test } from './suite-part';
import { deadlineFactory, TEST_DEADLINE } from './deadline';

/**
 * The policies of issue 14 as every adapter must behave (run with describe per adapter, beside
 * conformance()): refunds by response outcome (skipSuccessfulRequests, skipFailedRequests,
 * requestWasSuccessful), plans, lockouts, allow and deny lists, slow-down.
 */
export function policyConformance(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  describe(`${factory.name} conformance: policies`, () => {
    // Made when this suite starts: conformance()'s afterAll closes every client made before it.
    let redis: Redis;
    beforeAll(() => {
      redis = connect();
    });
    const apps: TestApp[] = [];
    const probes: Limiter[] = [];
    const startSpec = async (spec: AppSpec): Promise<TestApp> => {
      const app = await factory.makeApp(spec);
      apps.push(app);
      return app;
    };
    const start = (global: NeutralOptions): Promise<TestApp> => startSpec({ global });
    /** A limiter over the same keys as an app's own (same prefix, name and rules), to read its counts. */
    const probe = (options: { prefix: string; limits: NeutralOptions['limits'] }): Limiter => {
      const l = createLimiter({ ...TEST_DEADLINE, redis, prefix: options.prefix, limits: options.limits as LimiterOptions['limits'] });
      probes.push(l);
      return l;
    };
    const remaining = async (l: Limiter): Promise<number> => (await l.peek('ip:127.0.0.1')).remaining;
    const statusOf = async (app: TestApp, headers: Record<string, string> = {}): Promise<number> =>
      (await request(app.url).get('/').set(headers)).status;

    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await Promise.all(probes.splice(0).map((l) => l.close()));
    });
    afterAll(closeClients);

    describe('refunds', () => {
      const options = (extra: Partial<NeutralOptions>) => {
        const prefix = uniquePrefix(`${factory.name}-rf`);
        const limits = { limit: 3, window: '1m' } as const;
        return { global: { redis, prefix, limits, ...extra } as NeutralOptions, probe: { prefix, limits } };
      };

      // settled() after the requests: every refund their responses set off has reached Redis (or not been made).
      contract('skipFailedRequests: a response with status >= 400 gives its unit back; a success stays counted', async () => {
        const o = options({ skipFailedRequests: true });
        const app = await start(o.global);
        const counts = probe(o.probe);
        expect(await statusOf(app, { 'x-status': '500' })).toBe(500);
        expect(await statusOf(app, { 'x-status': '404' })).toBe(404);
        await settled();
        expect(await remaining(counts)).toBe(3);
        expect(await statusOf(app)).toBe(200);
        expect(await statusOf(app)).toBe(200);
        expect(await statusOf(app)).toBe(200);
        // Denied: a 429 is a failure, but a denial consumed nothing, so it refunds nothing either.
        expect(await statusOf(app)).toBe(429);
        await settled();
        expect(await remaining(counts)).toBe(0);
        expect(app.hits()).toBe(5);
      });

      test('skipSuccessfulRequests: only failures count', async () => {
        const o = options({ skipSuccessfulRequests: true });
        const app = await start(o.global);
        const counts = probe(o.probe);
        for (let k = 0; k < 5; k++) {
          expect(await statusOf(app)).toBe(200);
          await settled();
          expect(await remaining(counts)).toBe(3);
        }
        for (let k = 0; k < 3; k++) expect(await statusOf(app, { 'x-status': '503' })).toBe(503);
        expect(await statusOf(app)).toBe(429);
      });

      contract('a client that goes away before its response stays counted: only a finished response is judged', async () => {
        // skipSuccessfulRequests: judged, the unanswered response (status 200 so far) would be a success, given back.
        const o = options({ skipSuccessfulRequests: true });
        const handler = gate();
        const app = await startSpec({ global: o.global, slow: handler.slow });
        const counts = probe(o.probe);
        const client = leavingGet(app.url, '/slow');
        await handler.reached(1);
        client.leave();
        await client.gone;
        // Counted when it arrived (so concurrent requests cannot exceed the limit), and not given back when
        // the connection closed without a response, nor once the handler is done (docs/refunds.md).
        await settled();
        expect(await remaining(counts)).toBe(2);
        handler.open();
        await settled();
        expect(await remaining(counts)).toBe(2);
        expect(app.hits()).toBe(1);
      });

      contract('requestWasSuccessful decides what success is (it sees the request in every framework)', async () => {
        const o = options({ skipSuccessfulRequests: true, requestWasSuccessful: (req) => req.headers['x-ok'] === 'yes' });
        const app = await start(o.global);
        const counts = probe(o.probe);
        expect(await statusOf(app, { 'x-ok': 'yes', 'x-status': '500' })).toBe(500);
        await settled();
        expect(await remaining(counts)).toBe(3);
        expect(await statusOf(app)).toBe(200);
        await settled();
        expect(await remaining(counts)).toBe(2);
      });

      test('requestWasSuccessful that throws or rejects: the request is answered and stays counted', async () => {
        const warnings: string[] = [];
        for (const judge of [
          () => {
            throw new Error('judge broke');
          },
          () => Promise.reject(new Error('judge broke')),
        ]) {
          const o = options({
            skipSuccessfulRequests: true,
            requestWasSuccessful: judge,
            logger: { warn: (m: string) => void warnings.push(m) },
          });
          const app = await start(o.global);
          const counts = probe(o.probe);
          expect(await statusOf(app)).toBe(200);
          await settled();
          expect(await remaining(counts)).toBe(2);
        }
      });

      test('a shared limiter: refunds need `refunds: true` on it', async () => {
        const prefix = uniquePrefix(`${factory.name}-rs`);
        const plain = createLimiter({ ...TEST_DEADLINE, redis, prefix, name: 'plain', limits: { limit: 3, window: '1m' } });
        probes.push(plain);
        await expect(factory.makeApp({ global: { limiter: plain, skipFailedRequests: true } })).rejects.toMatchObject({
          option: 'skipFailedRequests',
        });
        const refundable = createLimiter({ ...TEST_DEADLINE, redis, prefix, limits: { limit: 3, window: '1m' }, refunds: true });
        probes.push(refundable);
        const app = await start({ limiter: refundable, skipFailedRequests: true });
        expect(await statusOf(app, { 'x-status': '500' })).toBe(500);
        await settled();
        expect(await remaining(refundable)).toBe(3);
      });

      test('bad refund options fail at construction naming the option', async () => {
        const base = { redis, prefix: uniquePrefix('bad'), limits: { limit: 3, window: '1m' } } as NeutralOptions;
        await expect(factory.makeApp({ global: { ...base, skipFailedRequests: 'yes' as unknown as boolean } })).rejects.toMatchObject({
          option: 'skipFailedRequests',
        });
        await expect(factory.makeApp({ global: { ...base, requestWasSuccessful: () => true } })).rejects.toMatchObject({
          option: 'requestWasSuccessful',
        });
        await expect(
          factory.makeApp({ global: { ...base, skipSuccessfulRequests: true, requestWasSuccessful: 'ok' as unknown as () => boolean } }),
        ).rejects.toMatchObject({ option: 'requestWasSuccessful' });
      });
    });
    restDescribe('plans', () => {
      const plans = { free: [{ limit: 2, window: '1m' }], pro: [{ limit: 4, window: '1m' }] };
      const planned = (extra: Partial<NeutralOptions> = {}): NeutralOptions =>
        ({
          redis,
          prefix: uniquePrefix(`${factory.name}-pl`),
          limits: plans,
          plan: (req) => req.headers['x-plan'] as string | undefined,
          ...extra,
        }) as NeutralOptions;

      test("plan(req) picks each request's rule set, and its headers; no plan is the first", async () => {
        const app = await start(planned());
        const free = await request(app.url).get('/');
        expect(free.headers['ratelimit-policy']).toBe('"1m";q=2;w=60');
        expect(await statusOf(app)).toBe(200);
        expect(await statusOf(app)).toBe(429);
        // The same client on the pro plan: the minute's 2 units carry over, 2 of 4 remain.
        const pro = await request(app.url).get('/').set('x-plan', 'pro');
        expect(pro.status).toBe(200);
        expect(pro.headers['ratelimit-policy']).toBe('"1m";q=4;w=60');
        expect(pro.headers.ratelimit).toMatch(/^"1m";r=1;t=\d+$/);
        expect(await statusOf(app, { 'x-plan': 'pro' })).toBe(200);
        expect(await statusOf(app, { 'x-plan': 'pro' })).toBe(429);
        expect(app.hits()).toBe(4);
      });

      test('an unknown plan, or a plan function that throws, is an error for the framework: never admitted, never counted', async () => {
        const app = await start(planned());
        const unknown = await request(app.url).get('/').set('x-plan', 'gold');
        expect(unknown.status).toBe(500);
        const throwing = await start(
          planned({
            plan: () => {
              throw new Error('plan lookup failed');
            },
          }),
        );
        expect((await request(throwing.url).get('/')).status).toBe(500);
        const rejecting = await start(planned({ plan: async () => Promise.reject(new Error('plan lookup failed')) }));
        expect((await request(rejecting.url).get('/')).status).toBe(500);
        expect(app.hits() + throwing.hits() + rejecting.hits()).toBe(0);
        // Nothing was counted for the failed requests.
        const free = await request(app.url).get('/');
        expect(free.headers.ratelimit).toMatch(/^"1m";r=1;t=\d+$/);
      });

      test('bad plan options fail at construction naming the option', async () => {
        await expect(
          factory.makeApp({
            global: { redis, prefix: uniquePrefix('bad'), limits: { limit: 2, window: '1m' }, plan: () => 'free' } as NeutralOptions,
          }),
        ).rejects.toMatchObject({ option: 'plan' });
        await expect(factory.makeApp({ global: planned({ plan: 'pro' as unknown as () => string }) })).rejects.toMatchObject({
          option: 'plan',
        });
        await expect(factory.makeApp({ global: planned({ limits: { free: [], pro: plans.pro } }) })).rejects.toMatchObject({
          option: 'limits.free',
        });
      });
    });
    restDescribe('lockouts', () => {
      test('after `after` denials the client is locked out: 429 with the lockout as Retry-After, for every route', async () => {
        const app = await start({
          redis,
          prefix: uniquePrefix(`${factory.name}-lo`),
          limits: { limit: 1, window: '1m' },
          lockout: { after: 2, within: '1m', duration: '10m', scope: 'ip' },
        } as NeutralOptions);
        expect(await statusOf(app)).toBe(200);
        const first = await request(app.url).get('/');
        expect(first.status).toBe(429);
        // The first denial is the rule's (the default sliding window: up to a bucket past the minute), not a lockout.
        expect(Number(first.headers['retry-after'])).toBeLessThanOrEqual(66);
        const locked = await request(app.url).get('/search');
        expect(locked.status).toBe(429);
        const retry = Number(locked.headers['retry-after']);
        expect(retry).toBeGreaterThan(590);
        expect(retry).toBeLessThanOrEqual(600);
        expect(app.hits()).toBe(1);
      });

      test('bad lockout options fail at construction naming the option', async () => {
        await expect(
          factory.makeApp({
            global: {
              redis,
              prefix: uniquePrefix('bad'),
              limits: { limit: 1, window: '1m' },
              lockout: { after: 0, within: '1m', duration: '1m', scope: 'ip' },
            },
          }),
        ).rejects.toMatchObject({ option: 'lockout.after' });
      });
    });
    describe('allow and deny lists', () => {
      const listed = (extra: Partial<NeutralOptions>) => {
        const prefix = uniquePrefix(`${factory.name}-ls`);
        const limits = { limit: 1, window: '1m' } as const;
        return { global: { redis, prefix, limits, ...extra } as NeutralOptions, probe: { prefix, limits } };
      };

      test('an allowed client is never limited and gets no rate-limit headers; nothing is counted', async () => {
        const o = listed({ allow: ['127.0.0.0/8'] });
        const app = await start(o.global);
        const counts = probe(o.probe);
        for (let k = 0; k < 3; k++) {
          const res = await request(app.url).get('/');
          expect(res.status).toBe(200);
          expect(res.headers.ratelimit).toBeUndefined();
          expect(res.headers['ratelimit-policy']).toBeUndefined();
        }
        expect(await remaining(counts)).toBe(1);
        expect(app.hits()).toBe(3);
      });

      contract('a denied client gets 403 without reaching the handler or Redis; denyStatusCode changes the status', async () => {
        const o = listed({ deny: ['127.0.0.1'] });
        const app = await start(o.global);
        const counts = probe(o.probe);
        const res = await request(app.url).get('/');
        expect(res.status).toBe(403);
        expect(res.body).toEqual(denialBodyOf(factory, { statusCode: 403, error: 'Forbidden', message: 'Forbidden' }, 403));
        expect(res.headers['retry-after']).toBeUndefined();
        expect(res.headers.ratelimit).toBeUndefined();
        expect(await remaining(counts)).toBe(1);
        // A status of the app's choosing: 451, or one tRPC has an error code for (Capabilities.anyRefusalStatus).
        const status = capabilitiesOf(factory).anyRefusalStatus ? 451 : 503;
        const other = await start(listed({ deny: ['user:mallory'], denyStatusCode: status }).global);
        expect(await statusOf(other, { 'x-user': 'mallory' })).toBe(status);
        expect(await statusOf(other, { 'x-user': 'alice' })).toBe(200);
        expect(app.hits() + other.hits()).toBe(1);
      });

      test('deny wins over allow, and over skip; a message function sees reason listed', async () => {
        const app = await start(
          listed({
            allow: ['127.0.0.1'],
            deny: ['user:mallory'],
            skip: () => true,
            message: (_req, decision) => (decision.reason === 'listed' ? 'go away' : 'slow down'),
          }).global,
        );
        const res = await request(app.url).get('/').set('x-user', 'mallory');
        expect(res.status).toBe(403);
        expect(res.body).toEqual(denialBodyOf(factory, { statusCode: 403, error: 'Forbidden', message: 'go away' }, 403));
        expect(await statusOf(app)).toBe(200);
        expect(app.hits()).toBe(1);
      });

      test('a spoofed X-Forwarded-For is not the client unless the proxy is trusted', async () => {
        const o = listed({ allow: ['203.0.113.0/24'] });
        const spoofed = { 'x-forwarded-for': '203.0.113.7' };
        const untrusted = await startSpec({ global: o.global });
        expect(await statusOf(untrusted, spoofed)).toBe(200);
        expect(await statusOf(untrusted, spoofed)).toBe(429);
        const trusted = await startSpec({ global: listed({ allow: ['203.0.113.0/24'] }).global, trustProxy: true });
        for (let k = 0; k < 3; k++) expect(await statusOf(trusted, spoofed)).toBe(200);
        // Behind the trusted proxy, an IPv4-mapped IPv6 address is the IPv4 client the rule names.
        expect(await statusOf(trusted, { 'x-forwarded-for': '::ffff:203.0.113.8' })).toBe(200);
        expect(await statusOf(trusted, { 'x-forwarded-for': '::ffff:203.0.113.8' })).toBe(200);
        // And an IPv6 client matches by its own address, not the /56 it is limited as.
        const v6 = await startSpec({ global: listed({ deny: ['2001:db8::7'] }).global, trustProxy: true });
        expect(await statusOf(v6, { 'x-forwarded-for': '2001:db8::7' })).toBe(403);
        expect(await statusOf(v6, { 'x-forwarded-for': '2001:db8::8' })).toBe(200);
      });

      test('setLists on a shared limiter changes the answer of the next request', async () => {
        const o = listed({});
        const shared = createLimiter({
          ...TEST_DEADLINE,
          redis,
          prefix: (o.global as { prefix: string }).prefix,
          limits: { limit: 5, window: '1m' },
        });
        probes.push(shared);
        const app = await start({ limiter: shared });
        expect(await statusOf(app)).toBe(200);
        shared.setLists({ deny: ['127.0.0.1'] });
        expect(await statusOf(app)).toBe(403);
        shared.setLists({ deny: [], allow: ['127.0.0.1'] });
        const res = await request(app.url).get('/');
        expect(res.status).toBe(200);
        expect(res.headers.ratelimit).toBeUndefined();
      });

      test('a malformed entry or denyStatusCode fails at construction naming the option', async () => {
        await expect(factory.makeApp({ global: listed({ allow: ['10.0.0.0/8', '10.0.0.0/33'] }).global })).rejects.toMatchObject({
          option: 'allow[1]',
        });
        await expect(factory.makeApp({ global: listed({ deny: ['999.1.1.1'] }).global })).rejects.toMatchObject({ option: 'deny[0]' });
        await expect(factory.makeApp({ global: listed({ denyStatusCode: 200 }).global })).rejects.toMatchObject({
          option: 'denyStatusCode',
        });
      });
    });
    given(capabilitiesOf(factory).slowDown, describe)('slow-down', () => {
      const slowed = (
        extra: Partial<NeutralSlowDownOptions>,
      ): { spec: NeutralSlowDownOptions; probe: { prefix: string; limits: NeutralOptions['limits'] } } => {
        const prefix = uniquePrefix(`${factory.name}-sd`);
        const limits = { limit: 10, window: '1m' } as const;
        return { spec: { redis, prefix, limits, ...extra } as NeutralSlowDownOptions, probe: { prefix, limits } };
      };
      /** Status and ms of one GET. */
      const timed = async (
        app: TestApp,
        headers: Record<string, string> = {},
      ): Promise<{ status: number; ms: number; res: request.Response }> => {
        const started = performance.now();
        const res = await request(app.url).get('/').set(headers);
        return { status: res.status, ms: performance.now() - started, res };
      };

      contract('after delayAfter requests each further one waits delayMs; no rate-limit headers by default', async () => {
        const app = await startSpec({ slowDown: slowed({ delayAfter: 2, delayMs: 400 }).spec });
        const first = await timed(app);
        const second = await timed(app);
        const third = await timed(app);
        expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
        expect(first.ms).toBeLessThan(300);
        expect(second.ms).toBeLessThan(300);
        expect(third.ms).toBeGreaterThanOrEqual(395);
        expect(third.res.headers.ratelimit).toBeUndefined();
        expect(app.hits()).toBe(3);
      });

      test('delayMs as a function gets the count and the request; maxDelayMs caps it, and the default formula', async () => {
        const seen: [number, unknown][] = [];
        const fn = await startSpec({
          slowDown: slowed({
            delayAfter: 1,
            maxDelayMs: 250,
            delayMs: (used, req) => {
              seen.push([used, req.headers['x-tag']]);
              return used === 2 ? 50 : 60_000;
            },
          }).spec,
        });
        await timed(fn, { 'x-tag': 'a' });
        expect((await timed(fn, { 'x-tag': 'b' })).ms).toBeGreaterThanOrEqual(48);
        const capped = await timed(fn, { 'x-tag': 'c' });
        expect(capped.ms).toBeGreaterThanOrEqual(245);
        expect(capped.ms).toBeLessThan(5_000);
        expect(seen).toEqual([
          [2, 'b'],
          [3, 'c'],
        ]);
        // The default: a second per request past delayAfter, here capped at 300 ms.
        const plain = await startSpec({ slowDown: slowed({ delayAfter: 1, maxDelayMs: 300 }).spec });
        await timed(plain);
        const second = await timed(plain);
        expect(second.ms).toBeGreaterThanOrEqual(295);
        expect(second.ms).toBeLessThan(900);
      });

      test('with rateLimit on the same limiter: counted once per request, first slowed, then refused', async () => {
        const o = slowed({});
        const shared = createLimiter({
          ...TEST_DEADLINE,
          redis,
          prefix: (o.spec as { prefix: string }).prefix,
          limits: { limit: 3, window: '1m' },
        });
        probes.push(shared);
        // A delay well apart from a request's own time, and a client already connected: a first request on a
        // loaded machine took 232 ms (CI), which a 150 ms delay could not be told from.
        const app = await startSpec({ slowDown: { limiter: shared, delayAfter: 1, delayMs: 400 }, global: { limiter: shared } });
        await shared.peek('ip:warm-up');
        const first = await timed(app);
        expect(first.status).toBe(200);
        expect(first.ms).toBeLessThan(300);
        expect(first.res.headers.ratelimit).toMatch(/r=2/);
        const second = await timed(app);
        expect(second.status).toBe(200);
        expect(second.ms).toBeGreaterThanOrEqual(395);
        expect(second.res.headers.ratelimit).toMatch(/r=1/);
        expect((await timed(app)).status).toBe(200);
        const refused = await timed(app);
        expect(refused.status).toBe(429);
        expect(refused.ms).toBeGreaterThanOrEqual(395);
        expect(app.hits()).toBe(3);
        expect(await remaining(shared)).toBe(0);
      });

      test('slowDown alone never refuses for the count: past the limit it keeps delaying', async () => {
        const app = await startSpec({
          slowDown: slowed({ limits: { limit: 2, window: '1m' }, delayAfter: 1, delayMs: (used) => used * 40 }).spec,
        });
        await timed(app);
        await timed(app);
        const past = await timed(app);
        expect(past.status).toBe(200);
        // Past the limit the count stays at limit + 1: 3 x 40 ms.
        expect(past.ms).toBeGreaterThanOrEqual(118);
        expect(app.hits()).toBe(3);
      });

      contract('a client that disconnects during its delay leaves no timer, never reaches the handler, and stays counted', async () => {
        let delaying!: () => void;
        const inDelay = new Promise<void>((resolve) => (delaying = resolve));
        const delayMs = (): number => {
          delaying();
          return 5_000;
        };
        const o = slowed({ delayAfter: 0, delayMs, maxDelayMs: 10_000, skipFailedRequests: true });
        const app = await startSpec({ slowDown: o.spec });
        const counts = probe(o.probe);
        const before = liveTimers();
        const client = leavingGet(app.url, '/');
        await inDelay;
        await new Promise((r) => setImmediate(r)); // the delay's timer is set a promise callback later
        const during = liveTimers();
        client.leave();
        // settled(): the server has seen the client leave during its delay, and done what it does then.
        await settled();
        const after = liveTimers();
        expect(after).toBeLessThan(during); // the delay's timer, cleared
        expect(after).toBeLessThanOrEqual(before);
        expect(app.hits()).toBe(0);
        // Leaving early buys nothing: the request is not given back, even with skipFailedRequests.
        expect(await remaining(counts)).toBe(9);
      });

      test('slowDown alone warns, once, about a proxy header it does not trust (as rateLimit does)', async () => {
        resetWarnings();
        const warnings: string[] = [];
        const app = await startSpec({
          slowDown: slowed({ delayAfter: 5, delayMs: 1, logger: { warn: (m: string) => void warnings.push(m) } }).spec,
        });
        for (const ip of ['1.1.1.1', '2.2.2.2']) expect(await statusOf(app, { 'x-forwarded-for': ip })).toBe(200);
        expect(warnings.filter((w) => w.includes('[forwarded-header-untrusted]'))).toHaveLength(1);
      });

      test('refund options work as for rateLimit: a failed response gives its unit back', async () => {
        const o = slowed({ delayAfter: 5, delayMs: 1, skipFailedRequests: true });
        const app = await startSpec({ slowDown: o.spec });
        const counts = probe(o.probe);
        expect(await statusOf(app, { 'x-status': '500' })).toBe(500);
        await settled();
        expect(await remaining(counts)).toBe(10);
        expect(await statusOf(app)).toBe(200);
        await settled();
        expect(await remaining(counts)).toBe(9);
      });

      test('a delayMs that throws, rejects or answers nonsense fails the request: never let through undelayed', async () => {
        for (const delayMs of [
          () => {
            throw new Error('delay lookup failed');
          },
          () => Promise.reject(new Error('delay lookup failed')),
          () => Number.NaN,
          () => -5,
          () => 'soon' as unknown as number,
        ]) {
          const app = await startSpec({ slowDown: slowed({ delayAfter: 0, delayMs }).spec });
          expect(await statusOf(app)).toBe(500);
          expect(app.hits()).toBe(0);
        }
      });

      test('the deny list refuses through slowDown at once; the allow list is never slowed', async () => {
        const denied = await startSpec({ slowDown: slowed({ delayAfter: 0, delayMs: 2_000, deny: ['127.0.0.1'] }).spec });
        const refused = await timed(denied);
        expect(refused.status).toBe(403);
        expect(refused.ms).toBeLessThan(1_000);
        const allowed = await startSpec({ slowDown: slowed({ delayAfter: 0, delayMs: 2_000, allow: ['127.0.0.0/8'] }).spec });
        const fast = await timed(allowed);
        expect(fast.status).toBe(200);
        expect(fast.ms).toBeLessThan(1_000);
        expect(denied.hits() + allowed.hits()).toBe(1);
      });

      test('bad slow-down options fail at construction naming the option', async () => {
        const cases: [Partial<NeutralSlowDownOptions>, string][] = [
          [{ delayAfter: -1 }, 'delayAfter'],
          [{ delayAfter: 1.5 }, 'delayAfter'],
          [{ delayAfter: 11 }, 'delayAfter'],
          [{ delayMs: -5 }, 'delayMs'],
          [{ delayMs: Number.POSITIVE_INFINITY }, 'delayMs'],
          [{ delayMs: '1s' as unknown as number }, 'delayMs'],
          [{ maxDelayMs: 0 }, 'maxDelayMs'],
          [{ maxDelayMs: 600_001 }, 'maxDelayMs'],
          [{ maxDelayMs: Number.POSITIVE_INFINITY }, 'maxDelayMs'],
          [{ windowMs: 60_000 } as Partial<NeutralSlowDownOptions>, 'windowMs'],
        ];
        for (const [extra, option] of cases) {
          await expect(factory.makeApp({ slowDown: slowed(extra).spec })).rejects.toMatchObject({ option });
        }
      });
    });
  });
}
