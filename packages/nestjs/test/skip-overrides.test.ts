import request from 'supertest';
import { APP_GUARD } from '@nestjs/core';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { FloodgateGuard, FloodgateModule, RateLimit, SkipRateLimit, SlowDown, type FloodgateModuleOptions } from '@floodgate/nestjs';
import { controller, startApp, statuses } from './nest-app';

/*
 * A skip leaves out the limits it names of every handler below it, the handlers' own included: a bare
 * @SkipRateLimit() on a controller silently dropped a @RateLimit() one of its handlers declared. Such a
 * limit never runs where it is declared; the application's start says so, once, to the module's logger
 * (as a skip that names no limit fails the start).
 */
const redis = connect();
const closing = closeAfterEach();
const limit = (name: string) => RateLimit({ name, limits: { limit: 1, window: '1m' } });

async function started(controllers: ReturnType<typeof controller>[], extra: Partial<FloodgateModuleOptions> = {}) {
  const warnings: string[] = [];
  const options = {
    redis,
    prefix: uniquePrefix('skips'),
    limits: { limit: 100, window: '1m' },
    logger: { warn: (m: string) => void warnings.push(m) },
    ...extra,
  };
  const { app, url } = await startApp('express', {
    imports: [FloodgateModule.forRoot(options)],
    controllers,
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  });
  closing(app);
  return { warnings, url };
}

test("a bare @SkipRateLimit() on a class that leaves out a handler's own @RateLimit() is named at the start", async () => {
  const { warnings, url } = await started([controller('/search', { find: [limit('search')], other: [] }, [SkipRateLimit()])]);
  expect(warnings).toEqual([
    expect.stringMatching(
      /^floodgate: limits declared where a @SkipRateLimit\(\) leaves them out, so they never run there: @RateLimit\(\) 'search' on searchController\.find, left out by @SkipRateLimit\(\) on searchController\. /,
    ),
  ]);
  // What it warns of: the handler's own limit of 1 does not run.
  expect(await statuses(url, '/search/find', 3)).toEqual([200, 200, 200]);
});

test("every limit left out at its own level is named, in one warning: a class's own, a handler's, a named skip's", async () => {
  const slow = SlowDown({ name: 'slow', limits: { limit: 5, window: '1m' }, delayAfter: 1, delayMs: 10 });
  const { warnings } = await started([
    controller('/a', { find: [limit('a-find'), slow] }, [SkipRateLimit(), limit('a')]),
    controller('/b', { find: [limit('b-find'), SkipRateLimit()] }),
    controller('/c', { find: [limit('c-find')], other: [limit('c-other')] }, [SkipRateLimit('c-find', 'default')]),
  ]);
  expect(warnings).toHaveLength(1);
  for (const named of [
    "@RateLimit() 'a' on aController, left out by @SkipRateLimit() on aController",
    "@RateLimit() 'a-find' on aController.find, left out by @SkipRateLimit() on aController",
    "@SlowDown() 'slow' on aController.find, left out by @SkipRateLimit() on aController",
    "@RateLimit() 'b-find' on bController.find, left out by @SkipRateLimit() on bController.find",
    "@RateLimit() 'c-find' on cController.find, left out by @SkipRateLimit('c-find', 'default') on cController",
  ]) {
    expect(warnings[0]).toContain(named);
  }
  expect(warnings[0]).not.toContain('c-other');
});

test('skips that leave out only limits declared above them are what skips are for: no warning', async () => {
  const { warnings, url } = await started([
    // The module's limit, out of a whole controller.
    controller('/free', { x: [] }, [SkipRateLimit()]),
    // A class's limit, out of one of its handlers.
    controller('/mixed', { open: [SkipRateLimit('mixed')], shut: [] }, [limit('mixed')]),
    // The module's limit, out of one handler that has its own.
    controller('/own', { find: [SkipRateLimit('default'), limit('own')] }),
  ]);
  expect(warnings).toEqual([]);
  expect(await statuses(url, '/own/find', 2)).toEqual([200, 429]);
  expect((await request(url).get('/mixed/open')).status).toBe(200);
  expect(await statuses(url, '/mixed/shut', 2)).toEqual([200, 429]);
});

test('warnings: false silences it', async () => {
  const { warnings } = await started([controller('/search', { find: [limit('search')] }, [SkipRateLimit()])], { warnings: false });
  expect(warnings).toEqual([]);
});
