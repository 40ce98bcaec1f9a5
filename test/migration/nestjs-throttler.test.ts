import request from 'supertest';
import {
  Catch,
  Module,
  UseGuards,
  type ArgumentsHost,
  type ExceptionFilter,
  type INestApplication,
  type ModuleMetadata,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import {
  SkipThrottle,
  Throttle,
  ThrottlerException,
  ThrottlerGuard,
  ThrottlerModule,
  type ThrottlerModuleOptions,
  type ThrottlerOptions,
} from '@nestjs/throttler';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import {
  FloodgateGuard,
  FloodgateModule,
  FloodgateThrottlerStorage,
  RateLimit,
  RateLimitException,
  SkipRateLimit,
  type FloodgateModuleOptions,
} from '@floodgate/nestjs';
import { controller, startApp, statuses } from '../../packages/nestjs/test/nest-app';
import { testClock, throttlerOnClock } from '../../packages/nestjs/test/throttler-apps';

/*
 * docs/migrating/nestjs-throttler.md, checked: each recipe of the guide runs in a real Nest app (over
 * sockets, the test Redis), and where it claims to keep @nestjs/throttler's behaviour, the same traffic
 * goes to an app of @nestjs/throttler 6 itself (its ThrottlerGuard and in-memory storage) and must get the
 * same answers. Where the guide says Floodgate differs, both sides of the difference are asserted.
 */
type Routes = Parameters<typeof controller>[1];
type ClassDecorators = Parameters<typeof controller>[2];
const closing = closeAfterEach();
const redis = connect();

/** An app of @nestjs/throttler: ThrottlerGuard everywhere, throttler's in-memory storage unless `options` has one. */
async function throttlerApp(options: ThrottlerModuleOptions, routes: Routes, classDecorators: ClassDecorators = []): Promise<string> {
  return start({
    imports: [ThrottlerModule.forRoot(options)],
    controllers: [controller('/', routes, classDecorators)],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  });
}
/** An app of Floodgate: FloodgateGuard everywhere, the test Redis and a prefix of its own. */
async function floodgateApp(options: Partial<FloodgateModuleOptions>, routes: Routes, classDecorators: ClassDecorators = []) {
  return start({
    imports: [FloodgateModule.forRoot({ redis, prefix: uniquePrefix('nestthr'), ...options } as FloodgateModuleOptions)],
    controllers: [controller('/', routes, classDecorators)],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  });
}
async function start(metadata: ModuleMetadata, platform: 'express' | 'fastify' = 'express'): Promise<string> {
  const { app, url } = await startApp(platform, metadata);
  closing(app);
  return url;
}

test('the README example: forRoot([{ ttl: 60000, limit }]) + ThrottlerGuard -> forRoot({ redis, limits }) + FloodgateGuard', async () => {
  const theirs = await throttlerApp([{ ttl: 60_000, limit: 3 }], { x: [] });
  const ours = await floodgateApp({ limits: { limit: 3, window: 60_000 }, headers: 'legacy' }, { x: [] });
  const [firstMine, firstTheirs] = [await request(ours).get('/x'), await request(theirs).get('/x')];
  // The same X-RateLimit-Limit and -Remaining while allowed (X-RateLimit-Reset differs: see the guide).
  expect([firstMine.headers['x-ratelimit-limit'], firstMine.headers['x-ratelimit-remaining']]).toEqual([
    firstTheirs.headers['x-ratelimit-limit'],
    firstTheirs.headers['x-ratelimit-remaining'],
  ]);
  expect(await statuses(ours, '/x', 3)).toEqual(await statuses(theirs, '/x', 3));
  const [mine, their] = [await request(ours).get('/x'), await request(theirs).get('/x')];
  expect([mine.status, their.status]).toEqual([429, 429]);
  // Throttler's is its block (blockDuration, by default the ttl); the sliding window's, until a unit is free
  // again: the window and at most one bucket (a tenth) more.
  expect(their.headers['retry-after']).toBe('60');
  expect(Number(mine.headers['retry-after'])).toBeGreaterThanOrEqual(55);
  expect(Number(mine.headers['retry-after'])).toBeLessThanOrEqual(66);
  expect(their.body).toEqual({ statusCode: 429, message: 'ThrottlerException: Too Many Requests' });
  expect(mine.body).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds?$/),
  });
});

test("counts per handler (throttler's default key) -> a @RateLimit on each handler; the module's limit is one budget per client", async () => {
  const routes = (a: never[], b: never[]): Routes => ({ a, b });
  const theirs = await throttlerApp([{ ttl: 60_000, limit: 2 }], routes([], []));
  const traffic = async (url: string) => [...(await statuses(url, '/a', 3)), ...(await statuses(url, '/b', 3))];
  // @nestjs/throttler: each handler its own 2.
  expect(await traffic(theirs)).toEqual([200, 200, 429, 200, 200, 429]);
  const perHandler = await floodgateApp(
    {},
    routes(
      [RateLimit({ name: 'a', limits: { limit: 2, window: '1m' } })] as never[],
      [RateLimit({ name: 'b', limits: { limit: 2, window: '1m' } })] as never[],
    ),
  );
  expect(await traffic(perHandler)).toEqual([200, 200, 429, 200, 200, 429]);
  // The module's limit (and throttler's generateKey: (context, tracker) => tracker): one budget across handlers.
  const shared = await floodgateApp({ limits: { limit: 2, window: '1m' } }, routes([], []));
  expect(await traffic(shared)).toEqual([200, 200, 429, 429, 429, 429]);
});

test('@Throttle({ default: { limit, ttl } }) replaces the limit on a handler -> @SkipRateLimit("default") + @RateLimit of its own', async () => {
  const theirs = await throttlerApp([{ ttl: 60_000, limit: 5 }], { strict: [Throttle({ default: { limit: 1, ttl: 60_000 } })], loose: [] });
  const ours = await floodgateApp(
    { limits: { limit: 5, window: '1m' } },
    { strict: [SkipRateLimit('default'), RateLimit({ name: 'strict', limits: { limit: 1, window: '1m' } })], loose: [] },
  );
  const traffic = async (url: string) => [...(await statuses(url, '/strict', 2)), ...(await statuses(url, '/loose', 6))];
  const [mine, their] = [await traffic(ours), await traffic(theirs)];
  expect(mine).toEqual(their);
  expect(mine).toEqual([200, 429, 200, 200, 200, 200, 200, 429]);
  // Without the skip, the route's limit adds to the module's: both count there.
  const added = await floodgateApp(
    { limits: { limit: 2, window: '1m' } },
    { strict: [RateLimit({ name: 'strict', limits: { limit: 5, window: '1m' } })], loose: [] },
  );
  expect([...(await statuses(added, '/strict', 3)), ...(await statuses(added, '/loose', 1))]).toEqual([200, 200, 429, 429]);
});

test('@SkipThrottle() -> @SkipRateLimit("default"); named throttlers and @SkipThrottle({ short: true }) -> a named limit and its skip', async () => {
  const theirs = await throttlerApp([{ ttl: 60_000, limit: 2 }], { free: [SkipThrottle()] });
  const ours = await floodgateApp({ limits: { limit: 2, window: '1m' } }, { free: [SkipRateLimit('default')] });
  expect(await statuses(ours, '/free', 4)).toEqual(await statuses(theirs, '/free', 4));

  const named: ThrottlerOptions[] = [
    { name: 'short', ttl: 1000, limit: 3 },
    { name: 'long', ttl: 60_000, limit: 5 },
  ];
  const routes = (skip: never[]): Routes => ({ noShort: skip, x: [] });
  const theirNamed = await throttlerApp(named, routes([SkipThrottle({ short: true })] as never[]));
  // 'long' is the module's limit, 'short' the class's, so that a handler can skip it by name.
  const ourNamed = await floodgateApp({ name: 'long', limits: { limit: 5, window: '1m' } }, routes([SkipRateLimit('short')] as never[]), [
    RateLimit({ name: 'short', limits: { limit: 3, window: '1s' } }),
  ]);
  expect(await statuses(ourNamed, '/noShort', 6)).toEqual(await statuses(theirNamed, '/noShort', 6));
  expect(await statuses(ourNamed, '/noShort', 1)).toEqual([429]);
});

test('a bare @SkipThrottle() once throttlers are named skips nothing; a skip naming no Floodgate limit fails the start', async () => {
  const theirs = await throttlerApp([{ name: 'short', ttl: 60_000, limit: 1 }], { free: [SkipThrottle()] });
  expect(await statuses(theirs, '/free', 2)).toEqual([200, 429]);
  const failed = floodgateApp({ name: 'short', limits: { limit: 1, window: '1m' } }, { free: [SkipRateLimit('default')] });
  await expect(failed).rejects.toThrow(/'default' on RootController\.free names no limit \(the limits are 'short'\)/);
});

/** The statuses (and Retry-After) of GET /x on throttler's app and on Floodgate's at each instant of the clock (ms). */
async function atInstants(
  theirs: string,
  ours: string,
  clock: { at: (ms: number) => void },
  instants: number[],
): Promise<[string, string]> {
  const answer = async (url: string): Promise<string> => {
    const res = await request(url).get('/x');
    return `${res.status}${res.status === 429 ? ` ${String(res.headers['retry-after'])}s` : ''}`;
  };
  const their: string[] = [];
  const mine: string[] = [];
  for (const ms of instants) {
    clock.at(ms);
    their.push(await answer(theirs));
    mine.push(await answer(ours));
  }
  return [their.join(', '), mine.join(', ')];
}

async function blockApps(ttl: number, limit: number, blockDuration: number) {
  const clock = testClock();
  const storage = throttlerOnClock(clock.now);
  closing(storage);
  const theirs = await throttlerApp({ throttlers: [{ ttl, limit, blockDuration }], storage }, { x: [] });
  const ours = await floodgateApp(
    // The deadline is not the subject: a Redis call past the default 250 ms on a loaded machine would be the failure policy's.
    {
      limits: { limit, window: ttl },
      lockout: { after: 1, within: ttl, duration: blockDuration, scope: 'ip' },
      clock: clock.now,
      timeoutMs: 10_000,
    },
    { x: [] },
  );
  return { clock, theirs, ours };
}

/** The instants of the block tests (ms): three requests at once, then through the block, its end, the window's end and a second block. */
const INSTANTS = [0, 1, 2, 4_000, 5_600, 9_000, 10_500, 11_100, 15_600, 19_000, 20_500, 21_100, 30_000];

test.each([
  ['longer than the ttl', 20_000],
  ['the ttl and a tenth', 11_000],
])(
  'blockDuration %s (%d ms; ttl 10 s, limit 2) -> lockout: { after: 1, within: ttl, duration: blockDuration, scope: "ip" }, as throttler',
  async (_, block) => {
    const { clock, theirs, ours } = await blockApps(10_000, 2, block);
    const [their, mine] = await atInstants(theirs, ours, clock, INSTANTS);
    expect(mine).toEqual(their);
    // The third request blocks for blockDuration, counting nothing meanwhile.
    expect(mine).toMatch(new RegExp(`^200, 200, 429 ${block / 1000}s, `));
  },
);

test('a blockDuration shorter than the ttl and a tenth: throttler counts afresh once the block ends; Floodgate refuses until the window has room, each refusal a lockout', async () => {
  // 5 s, shorter than the window: throttler lets the client in at 5.6 s; Floodgate's window still holds the
  // first two requests, so the request at 5.6 s is refused and locks the client out for 5 s more.
  const short = await blockApps(10_000, 2, 5_000);
  const [theirShort, mineShort] = await atInstants(short.theirs, short.ours, short.clock, INSTANTS);
  expect(theirShort).toBe('200, 200, 429 5s, 429 2s, 200, 200, 429 5s, 429 5s, 200, 200, 429 5s, 429 5s, 200');
  expect(mineShort).toBe('200, 200, 429 5s, 429 2s, 429 5s, 429 2s, 429 1s, 200, 200, 429 5s, 429 4s, 429 3s, 200');
  // The ttl, throttler's default blockDuration: at 10.5 s the first requests are still in the sliding window (up to
  // a tenth of it longer), so a client that comes back when Retry-After said is locked out for another 10 s.
  const equal = await blockApps(10_000, 2, 10_000);
  const [theirEqual, mineEqual] = await atInstants(equal.theirs, equal.ours, equal.clock, INSTANTS);
  expect(theirEqual).toBe('200, 200, 429 10s, 429 7s, 429 5s, 429 2s, 200, 200, 429 10s, 429 7s, 429 6s, 429 5s, 200');
  expect(mineEqual).toBe('200, 200, 429 10s, 429 7s, 429 5s, 429 2s, 429 10s, 429 10s, 429 5s, 429 2s, 200, 200, 429 10s');
});

test('getTracker -> identify; the proxy recipe (req.ips[0]) -> trust proxy, whose client address a client cannot choose', async () => {
  const byKey = { getTracker: (req: Record<string, any>) => String(req.headers['x-api-key']) };
  const theirs = await throttlerApp({ throttlers: [{ ttl: 60_000, limit: 1 }], ...byKey }, { x: [] });
  const ours = await floodgateApp(
    { limits: { limit: 1, window: '1m' }, identify: (req) => `key:${String(req.headers['x-api-key'])}` },
    { x: [] },
  );
  const traffic = async (url: string) => [
    ...(await statuses(url, '/x', 2, { 'x-api-key': 'a' })),
    ...(await statuses(url, '/x', 1, { 'x-api-key': 'b' })),
  ];
  expect(await traffic(ours)).toEqual(await traffic(theirs));
});

test.each([
  ['express', (app: INestApplication) => void (app as NestExpressApplication).set('trust proxy', 'loopback')],
  ['fastify', undefined],
] as const)(
  "ThrottlerBehindProxyGuard (req.ips[0]) -> the platform's trust proxy (%s): clients behind the proxy count apart, and cannot pick their address",
  async (platform, trust) => {
    const metadata = {
      imports: [FloodgateModule.forRoot({ redis, prefix: uniquePrefix('nestthr'), limits: { limit: 1, window: '1m' } })],
      controllers: [controller('/', { x: [] })],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    };
    const { app, url } = await startApp(platform, metadata, { trustProxy: '127.0.0.1' });
    closing(app);
    trust?.(app);
    // The proxy (this host) appends the address it saw; a client writes what it likes before it.
    const from = async (xff: string) => statuses(url, '/x', 1, { 'x-forwarded-for': xff });
    expect([
      ...(await from('203.0.113.7')),
      ...(await from('198.51.100.9')),
      ...(await from('1.1.1.1, 203.0.113.7')),
      ...(await from('2.2.2.2, 203.0.113.7')),
    ]).toEqual([200, 200, 429, 429]);
  },
);

test('skipIf(context) -> skip(req); ignoreUserAgents -> skip on the User-Agent, which any client can send', async () => {
  const skipIf = (context: { switchToHttp(): { getRequest(): { headers: Record<string, string> } } }) =>
    context.switchToHttp().getRequest().headers['x-internal'] === 'yes';
  const theirs = await throttlerApp({ throttlers: [{ ttl: 60_000, limit: 1 }], skipIf, ignoreUserAgents: [/googlebot/i] }, { x: [] });
  const ours = await floodgateApp(
    {
      limits: { limit: 1, window: '1m' },
      skip: (req) => req.headers['x-internal'] === 'yes' || /googlebot/i.test(req.headers['user-agent'] ?? ''),
    },
    { x: [] },
  );
  const traffic = async (url: string) => [
    ...(await statuses(url, '/x', 2)),
    ...(await statuses(url, '/x', 2, { 'x-internal': 'yes' })),
    ...(await statuses(url, '/x', 2, { 'user-agent': 'Mozilla/5.0 (compatible; Googlebot/2.1)' })),
  ];
  expect(await traffic(ours)).toEqual(await traffic(theirs));
  expect(await traffic(ours)).toEqual([429, 429, 200, 200, 200, 200]);
});

test('errorMessage (a string or (context, detail) => string) -> message (a string or (req, decision) => string or a body)', async () => {
  const theirs = await throttlerApp({ throttlers: [{ ttl: 60_000, limit: 1 }], errorMessage: 'Slow down' }, { x: [] });
  const ours = await floodgateApp({ limits: { limit: 1, window: '1m' }, message: 'Slow down' }, { x: [] });
  await request(theirs).get('/x');
  await request(ours).get('/x');
  expect((await request(theirs).get('/x')).body.message).toBe('Slow down');
  expect((await request(ours).get('/x')).body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: 'Slow down' });
  const fn = await floodgateApp(
    {
      limits: { limit: 1, window: '1m' },
      message: (_req, decision) => `${decision.limit} a minute; wait ${Math.ceil(decision.retryAfterMs / 1000)} s`,
    },
    { x: [] },
  );
  await request(fn).get('/x');
  expect((await request(fn).get('/x')).body.message).toMatch(/^1 a minute; wait \d+ s$/);
});

test('storage (a Redis storage) -> redis; setHeaders: false -> headers: false; ipv6SubnetPrefix (64) -> ipv6Subnet (56 by default)', async () => {
  const prefix = uniquePrefix('nestthr');
  const url = await start({
    imports: [FloodgateModule.forRoot({ redis, prefix, limits: { limit: 1, window: '1m' }, headers: false, ipv6Subnet: 64 })],
    controllers: [controller('/', { x: [] })],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  });
  const res = await request(url).get('/x');
  expect([res.headers.ratelimit, res.headers['x-ratelimit-limit'], res.headers['ratelimit-policy']]).toEqual([
    undefined,
    undefined,
    undefined,
  ]);
  expect(await redis.exists(`${prefix}:default:sw2:{ip:127.0.0.1}`)).toBe(1);
  const denied = await request(url).get('/x');
  // No rate-limit headers, but a denial still says when to come back.
  expect([denied.status, Number(denied.headers['retry-after']) >= 1]).toEqual([429, true]);
});

test('limit: (context) => number -> plan(req) over named rule sets', async () => {
  const proOf = (req: { headers: Record<string, unknown> }): boolean => req.headers['x-plan'] === 'pro';
  const ours = () =>
    floodgateApp(
      { limits: { free: { limit: 1, window: '1m' }, pro: { limit: 3, window: '1m' } }, plan: (req) => (proOf(req) ? 'pro' : 'free') },
      { x: [] },
    );
  const theirs = () => throttlerApp([{ ttl: 60_000, limit: (context) => (proOf(context.switchToHttp().getRequest()) ? 3 : 1) }], { x: [] });
  for (const [plan, n] of [
    ['free', 2],
    ['pro', 4],
  ] as const) {
    const [a, b] = [await ours(), await theirs()];
    const [mine, their] = [await statuses(a, '/x', n, { 'x-plan': plan }), await statuses(b, '/x', n, { 'x-plan': plan })];
    expect(mine).toEqual(their);
    expect(mine).toEqual(plan === 'pro' ? [200, 200, 200, 429] : [200, 429]);
  }
});

test('@Catch(ThrottlerException) -> @Catch(RateLimitException), which carries the decision; @UseGuards(ThrottlerGuard) -> @UseGuards(FloodgateGuard)', async () => {
  const filterOf = (type: new (...args: never[]) => object) => {
    class Filter implements ExceptionFilter {
      catch(_exception: unknown, host: ArgumentsHost): void {
        host.switchToHttp().getResponse<{ status(n: number): { json(b: object): void } }>().status(503).json({ busy: true });
      }
    }
    Catch(type)(Filter);
    return { provide: APP_FILTER, useClass: Filter };
  };
  const theirs = await start({
    imports: [ThrottlerModule.forRoot([{ ttl: 60_000, limit: 1 }])],
    controllers: [controller('/', { x: [UseGuards(ThrottlerGuard)] })],
    providers: [filterOf(ThrottlerException)],
  });
  const ours = await start({
    imports: [FloodgateModule.forRoot({ redis, prefix: uniquePrefix('nestthr'), limits: { limit: 1, window: '1m' } })],
    controllers: [controller('/', { x: [UseGuards(FloodgateGuard)] })],
    providers: [filterOf(RateLimitException)],
  });
  expect(await statuses(ours, '/x', 2)).toEqual(await statuses(theirs, '/x', 2));
  expect((await request(ours).get('/x')).body).toEqual({ busy: true });
});

test('ThrottlerModule.forRootAsync({ inject, useFactory }) -> FloodgateModule.forRootAsync, the Redis client from your provider', async () => {
  const REDIS = Symbol('REDIS');
  class RedisModule {}
  Module({ providers: [{ provide: REDIS, useValue: redis }], exports: [REDIS] })(RedisModule);
  const url = await start({
    imports: [
      FloodgateModule.forRootAsync({
        imports: [RedisModule],
        inject: [REDIS],
        useFactory: (client: typeof redis) => ({ redis: client, prefix: uniquePrefix('nestthr'), limits: { limit: 1, window: '1m' } }),
      }),
    ],
    controllers: [controller('/', { x: [] })],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  });
  expect(await statuses(url, '/x', 2)).toEqual([200, 429]);
});

test.each(['express', 'fastify'] as const)(
  "keeping throttler's decorators on %s: storage: new FloodgateThrottlerStorage({ redis }), shared by two apps",
  async (platform) => {
    const prefix = uniquePrefix('nestthr');
    const app = () =>
      start(
        {
          imports: [
            ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 2 }], storage: new FloodgateThrottlerStorage({ redis, prefix }) }),
          ],
          controllers: [controller('/', { x: [], strict: [Throttle({ default: { limit: 1, ttl: 60_000 } })], free: [SkipThrottle()] })],
          providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
        },
        platform,
      );
    const [a, b] = [await app(), await app()];
    expect([...(await statuses(a, '/x', 1)), ...(await statuses(b, '/x', 2))]).toEqual([200, 200, 429]);
    expect([...(await statuses(a, '/strict', 1)), ...(await statuses(b, '/strict', 1))]).toEqual([200, 429]);
    expect(await statuses(b, '/free', 3)).toEqual([200, 200, 200]);
  },
);
