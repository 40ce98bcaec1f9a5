import request from 'supertest';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule, ThrottlerStorageService, type ThrottlerStorage } from '@nestjs/throttler';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { FloodgateThrottlerStorage } from '@floodgate/nestjs';
import { controller, startApp } from './nest-app';

/*
 * FloodgateThrottlerStorage under @nestjs/throttler's own ThrottlerGuard, in a real Nest app on a real
 * Redis: the same timed traffic against throttler's in-memory storage and against this one must get the
 * same answers (status, X-RateLimit-Remaining, Retry-After within a second's rounding). The times keep 200 ms
 * or more from every expiry, so a loaded machine's scheduling cannot move a request across one.
 */
const redis = connect();
const closing = closeAfterEach();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function appWith(storage: ThrottlerStorage, throttlers: { name?: string; ttl: number; limit: number; blockDuration?: number }[]) {
  const { app, url } = await startApp('express', {
    imports: [ThrottlerModule.forRoot({ throttlers, storage })],
    controllers: [controller('/', { x: [] })],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  });
  closing(app);
  return url;
}

type Answer = [number, string | undefined, number | undefined];
/** Sends one GET at each offset (ms from the start); the answers. */
async function traffic(url: string, at: number[], suffix = ''): Promise<Answer[]> {
  const t0 = performance.now();
  const out: Answer[] = [];
  for (const ms of at) {
    await sleep(Math.max(0, t0 + ms - performance.now()));
    const res = await request(url).get('/x');
    const retry = res.headers[`retry-after${suffix}`] as string | undefined;
    out.push([
      res.status,
      res.headers[`x-ratelimit-remaining${suffix}`] as string | undefined,
      retry === undefined ? undefined : Number(retry),
    ]);
  }
  return out;
}

/** Retry-After compared within a second: the two storages round the same instant a few ms apart. */
function expectSame(floodgate: Answer[], memory: Answer[]): void {
  expect(floodgate.map(([s, r]) => [s, r])).toEqual(memory.map(([s, r]) => [s, r]));
  floodgate.forEach(([, , retry], i) => {
    const theirs = memory[i]![2];
    expect(retry === undefined).toBe(theirs === undefined);
    if (retry !== undefined) expect(Math.abs(retry - theirs!)).toBeLessThanOrEqual(1);
  });
}

test.each([
  [
    'a burst past the limit, blocked longer than the ttl, then counted from zero',
    { ttl: 400, limit: 2, blockDuration: 1500 },
    // The block ends ~1,520 ms in; the last two requests keep ~800 ms from it (at 2,000 ms, 480 ms from it,
    // a loaded CI machine once found the block still in force).
    [0, 10, 20, 600, 1100, 2300, 2310],
  ],
  ['a sliding count: each hit leaves the count ttl after it was made', { ttl: 1000, limit: 2 }, [0, 500, 1250, 1300, 1800]],
  [
    'a block shorter than the ttl: the count starts from zero when it ends',
    { ttl: 1500, limit: 2, blockDuration: 300 },
    [0, 10, 20, 600, 610, 620],
  ],
  ['the block defaults to the ttl', { ttl: 500, limit: 1 }, [0, 10, 250, 800, 810]],
])('as the in-memory storage: %s', async (_label, throttler, at) => {
  const memory = await appWith(new ThrottlerStorageService(), [throttler]);
  const floodgate = await appWith(new FloodgateThrottlerStorage({ redis, prefix: uniquePrefix('throttler') }), [throttler]);
  const [theirs, ours] = await Promise.all([traffic(memory, at), traffic(floodgate, at)]);
  expectSame(ours, theirs);
  expect(ours.some(([status]) => status === 429)).toBe(true);
});

test('named throttlers each count on their own, and two apps on one Redis share the counts', async () => {
  const prefix = uniquePrefix('throttler-shared');
  const throttlers = [
    { name: 'short', ttl: 1000, limit: 3 },
    { name: 'long', ttl: 60_000, limit: 5 },
  ];
  const a = await appWith(new FloodgateThrottlerStorage({ redis, prefix }), throttlers);
  const b = await appWith(new FloodgateThrottlerStorage({ redis, prefix }), throttlers);
  const first = await request(a).get('/x');
  expect([first.headers['x-ratelimit-remaining-short'], first.headers['x-ratelimit-remaining-long']]).toEqual(['2', '4']);
  expect((await request(b).get('/x')).headers['x-ratelimit-remaining-short']).toBe('1');
  expect((await request(a).get('/x')).status).toBe(200);
  const denied = await request(b).get('/x');
  expect(denied.status).toBe(429);
  expect(Number(denied.headers['retry-after-short'])).toBeGreaterThanOrEqual(1);
});

test("failure 'closed' with Redis unreachable refuses (429) rather than admitting; bad options are a ConfigError", async () => {
  const down = connect('redis://127.0.0.1:1');
  const url = await appWith(
    new FloodgateThrottlerStorage({ redis: down, failure: 'closed', timeoutMs: 100, logger: { warn: () => undefined } }),
    [{ ttl: 1000, limit: 5 }],
  );
  expect((await request(url).get('/x')).status).toBe(429);
  down.disconnect();
  expect(() => new FloodgateThrottlerStorage({ windowMs: 1000 } as never)).toThrow(expect.objectContaining({ option: 'windowMs' }));
  expect(() => new FloodgateThrottlerStorage({ failure: 'closed' })).toThrow(expect.objectContaining({ option: 'failure' }));
});
