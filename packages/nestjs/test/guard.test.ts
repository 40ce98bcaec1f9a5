import request from 'supertest';
import { Catch, Module, UseGuards, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import {
  FloodgateGuard,
  FloodgateModule,
  RateLimit,
  RateLimitException,
  SkipRateLimit,
  type FloodgateModuleOptions,
} from '@floodgate/nestjs';
import { controller, startApp, statuses } from './nest-app';

/*
 * What is Nest's own: where the guard goes (everywhere, a controller, a handler), the decorators' levels,
 * skips that name what they skip, forRootAsync with the application's Redis provider, and exception filters.
 */
const redis = connect();
const closing = closeAfterEach();
const options = (extra: Partial<FloodgateModuleOptions> = {}): FloodgateModuleOptions =>
  // A 10 s deadline: the deadline is not these tests' subject, and a loaded machine's check may pass the default.
  ({ redis, prefix: uniquePrefix('nest'), limits: { limit: 2, window: '1m' }, timeoutMs: 10_000, ...extra }) as FloodgateModuleOptions;
const appGuard = { provide: APP_GUARD, useClass: FloodgateGuard };

describe.each(['express', 'fastify'] as const)('on %s', (platform) => {
  const start = async (...args: Parameters<typeof startApp>[1][]) => {
    const started = await startApp(platform, args[0]!);
    closing(started.app);
    return started.url;
  };

  test('@SkipRateLimit names the limits it skips; the bare form skips every limit', async () => {
    const search = { name: 'search', limits: { limit: 1, window: '1m' } };
    const url = await start({
      imports: [FloodgateModule.forRoot(options())],
      controllers: [
        controller('/', {
          plain: [],
          noDefault: [SkipRateLimit('default'), RateLimit(search)],
          nothing: [SkipRateLimit()],
        }),
      ],
      providers: [appGuard],
    });
    // Only the route's own limit (1) applies where 'default' is skipped.
    expect(await statuses(url, '/noDefault', 2)).toEqual([200, 429]);
    expect(await statuses(url, '/nothing', 4)).toEqual([200, 200, 200, 200]);
    // The module's limit (2) is untouched by the skipped routes.
    expect(await statuses(url, '/plain', 3)).toEqual([200, 200, 429]);
    expect((await request(url).get('/nothing')).headers.ratelimit).toBeUndefined();
  });

  test('a skip naming no limit fails the start, naming the name and where it is', async () => {
    const failed = start({
      imports: [FloodgateModule.forRoot(options())],
      controllers: [controller('/', { find: [SkipRateLimit('defualt')] })],
      providers: [appGuard],
    });
    await expect(failed).rejects.toMatchObject({ code: 'ERR_FLOODGATE_CONFIG', option: 'SkipRateLimit' });
    await expect(failed).rejects.toThrow(/'defualt' on RootController\.find names no limit \(the limits are 'default'\)/);
  });

  test('a class limit is one budget for its handlers, added to the module limit; handler limits add to both', async () => {
    const url = await start({
      imports: [FloodgateModule.forRoot(options({ limits: { limit: 10, window: '1m' } }))],
      controllers: [
        controller('/a', { one: [], two: [RateLimit({ name: 'two', limits: { limit: 1, window: '1m' } })] }, [
          RateLimit({ name: 'class-a', limits: { limit: 3, window: '1m' } }),
        ]),
      ],
      providers: [appGuard],
    });
    const first = await request(url).get('/a/two');
    expect(first.headers['ratelimit-policy']).toBe('"1m";q=10;w=60, "class-a-1m";q=3;w=60, "two-1m";q=1;w=60');
    expect(await statuses(url, '/a/two', 1)).toEqual([429]);
    // The class budget: 2 of 3 spent (the denial above was the handler's and spent nothing of it).
    expect(await statuses(url, '/a/one', 2)).toEqual([200, 429]);
  });

  test('@UseGuards on a controller or a handler limits only what it guards; with APP_GUARD too, a request counts once', async () => {
    const guarded = controller('/guarded', { x: [] }, [UseGuards(FloodgateGuard)]);
    const mixed = controller('/mixed', { limited: [UseGuards(FloodgateGuard)], free: [] });
    const url = await start({ imports: [FloodgateModule.forRoot(options())], controllers: [guarded, mixed] });
    expect(await statuses(url, '/guarded/x', 3)).toEqual([200, 200, 429]);
    expect(await statuses(url, '/mixed/free', 4)).toEqual([200, 200, 200, 200]);
    expect(await statuses(url, '/mixed/limited', 1)).toEqual([429]);

    const twice = await start({
      imports: [FloodgateModule.forRoot(options())],
      controllers: [controller('/twice', { x: [] }, [UseGuards(FloodgateGuard)])],
      providers: [appGuard],
    });
    const res = await request(twice).get('/twice/x');
    expect(res.headers.ratelimit).toMatch(/^"1m";r=1;t=\d+$/);
    expect(await statuses(twice, '/twice/x', 2)).toEqual([200, 429]);
  });

  test("forRootAsync takes the Redis client from the application's own provider", async () => {
    const REDIS = Symbol('REDIS');
    class RedisModule {}
    Module({ providers: [{ provide: REDIS, useValue: redis }], exports: [REDIS] })(RedisModule);
    const prefix = uniquePrefix('nest-async');
    const url = await start({
      imports: [
        FloodgateModule.forRootAsync({
          imports: [RedisModule],
          inject: [REDIS],
          useFactory: async (client: typeof redis) => ({ redis: client, prefix, limits: { limit: 1, window: '1m' } }),
        }),
      ],
      controllers: [controller('/', { x: [] })],
      providers: [appGuard],
    });
    expect(await statuses(url, '/x', 2)).toEqual([200, 429]);
    expect(await redis.exists(`${prefix}:default:sw2:{ip:127.0.0.1}`)).toBe(1);
  });

  test("an exception filter of the application's catches the denial, with its decision; the headers are already set", async () => {
    class Filter implements ExceptionFilter {
      catch(exception: RateLimitException, host: ArgumentsHost): void {
        const res = host
          .switchToHttp()
          .getResponse<{ status?: (n: number) => { json: (b: object) => void }; code?: (n: number) => { send: (b: object) => void } }>();
        const body = { wait: exception.decision!.retryAfterMs > 0, reason: exception.decision!.reason, source: exception.decision!.source };
        if (res.code) res.code(418).send(body);
        else res.status!(418).json(body);
      }
    }
    Catch(RateLimitException)(Filter);
    const url = await start({
      imports: [FloodgateModule.forRoot(options({ limits: { limit: 1, window: '1m' } }))],
      controllers: [controller('/', { x: [] })],
      providers: [appGuard, { provide: APP_FILTER, useClass: Filter }],
    });
    await request(url).get('/x');
    const denied = await request(url).get('/x');
    expect([denied.status, denied.body]).toEqual([418, { wait: true, reason: 'limit', source: 'redis' }]);
    expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The next denial is the block cache's, known at once (the guard answers it without a promise of its own).
    const cached = await request(url).get('/x');
    expect([cached.status, cached.body]).toEqual([418, { wait: true, reason: 'limit', source: 'cache' }]);
    expect(Number(cached.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  test("a later limit's denial from the block cache, after an earlier limit waited on Redis, still refuses", async () => {
    // The module's limit admits (a promise, answered by Redis), then the route's own limit denies at once.
    const url = await start({
      imports: [FloodgateModule.forRoot(options({ limits: { limit: 100, window: '1m' } }))],
      controllers: [controller('/', { x: [RateLimit({ name: 'route', limits: { limit: 1, window: '1m' } })] })],
      providers: [appGuard],
    });
    expect(await statuses(url, '/x', 4)).toEqual([200, 429, 429, 429]);
  });

  test('a denial the block cache answers reaches Nest as a 429 with its headers; a later limit of the route does not run', async () => {
    const url = await start({
      imports: [FloodgateModule.forRoot(options({ limits: { limit: 1, window: '1m' } }))],
      controllers: [controller('/', { x: [RateLimit({ name: 'route', limits: { limit: 100, window: '1m' } })] })],
      providers: [appGuard],
    });
    expect((await request(url).get('/x')).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const denied = await request(url).get('/x');
      expect(denied.status).toBe(429);
      expect(denied.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
      expect(denied.headers['content-type']).toMatch(/^application\/json/);
      expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Only the module's limit answered: the route's limit (which would add its "route-1m" item) did not run.
      expect(denied.headers.ratelimit).toMatch(/^"1m";r=0;t=\d+$/);
    }
  });
});

test('module options that only a module-wide limit uses, given without `limits`, fail the start', async () => {
  await expect(
    startApp('express', {
      imports: [FloodgateModule.forRoot({ redis, skip: () => true } as FloodgateModuleOptions)],
      controllers: [controller('/', { x: [] })],
    }),
  ).rejects.toMatchObject({ option: 'skip' });
  // Without `limits`, a route limit inherits the module's settings (here the prefix).
  const prefix = uniquePrefix('nest-inherit');
  const { app, url } = await startApp('express', {
    imports: [FloodgateModule.forRoot({ redis, prefix })],
    controllers: [controller('/', { x: [RateLimit({ name: 'x', limits: { limit: 1, window: '1m' } })] })],
    providers: [appGuard],
  });
  closing(app);
  expect(await statuses(url, '/x', 2)).toEqual([200, 429]);
  expect(await redis.exists(`${prefix}:x:sw2:{ip:127.0.0.1}`)).toBe(1);
});
