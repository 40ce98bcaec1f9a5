import request from 'supertest';
import type { Redis } from 'ioredis';
import type { ThrottlerOptions, ThrottlerStorage } from '@nestjs/throttler';
import { closeAfterEach, closeClients, connect, uniquePrefix } from '@floodgate/testing';
import { FloodgateThrottlerStorage } from '@floodgate/nestjs';
import type { Platform } from './app-factory';
import { throttledApp, throttlerOnClock } from './throttler-apps';

/*
 * The attack on FloodgateThrottlerStorage (docs/security.md, "@nestjs/throttler's storage"): a client that
 * keeps sending past the limit, one after the other and all at once, through @nestjs/throttler's own
 * ThrottlerGuard over real sockets, and straight at the storage. Whatever the blockDuration, it must get
 * what throttler's own storage gives it: the limit, and not one request more. The ttl (a minute) outlasts
 * the test, so no count leaves its window meanwhile. Floodgate's storage runs with `failure: 'closed'`: were
 * Redis out of reach, it would admit nothing, and no figure here could pass.
 */
const TTL = 60_000;
const LIMIT = 5;
const BLOCKS: [string, number | undefined][] = [
  ['blockDuration 0', 0],
  ['no blockDuration (the ttl)', undefined],
  ['a blockDuration shorter than the ttl', 20_000],
  ['a blockDuration longer than the ttl', 120_000],
];

afterAll(closeClients);

function throttlerStorageAttack(platform: Platform): void {
  describe(`${platform}: the attack on FloodgateThrottlerStorage (docs/security.md)`, () => {
    const closing = closeAfterEach();
    let redis: Redis;
    beforeAll(() => {
      redis = connect();
    });

    /** What the handler ran for `send`, through ThrottlerGuard on throttler's storage and on Floodgate's. */
    async function admitted(
      throttler: ThrottlerOptions,
      send: (url: string) => Promise<unknown>,
    ): Promise<{ theirs: number; ours: number }> {
      const theirs = throttlerOnClock();
      const ours = new FloodgateThrottlerStorage({ redis, prefix: uniquePrefix('throttler-attack'), failure: 'closed', timeoutMs: 10_000 });
      closing(theirs);
      closing({ close: () => ours.onApplicationShutdown() });
      const count = async (storage: ThrottlerStorage): Promise<number> => {
        const hits: Record<string, number> = {};
        const { app, url } = await throttledApp(platform, storage, [throttler], hits);
        closing(app);
        await send(url);
        return hits.x ?? 0;
      };
      return { theirs: await count(theirs), ours: await count(ours) };
    }

    test.each(BLOCKS)(
      `limit ${LIMIT}, 20 requests one after the other, ${'%s'}: the limit, as throttler's storage`,
      async (_label, blockDuration) => {
        const figures = await admitted({ ttl: TTL, limit: LIMIT, blockDuration }, async (url) => {
          for (let i = 0; i < 20; i++) await request(url).get('/x');
        });
        expect(figures).toEqual({ theirs: LIMIT, ours: LIMIT });
      },
    );

    test.each(BLOCKS)(`limit ${LIMIT}, 200 requests at once, ${'%s'}: the limit, as throttler's storage`, async (_label, blockDuration) => {
      const figures = await admitted({ ttl: TTL, limit: LIMIT, blockDuration }, (url) =>
        Promise.all(Array.from({ length: 200 }, () => request(url).get('/x'))),
      );
      expect(figures).toEqual({ theirs: LIMIT, ours: LIMIT });
    });
  });
}

throttlerStorageAttack('express');
throttlerStorageAttack('fastify');

// Straight at the storage: no platform in the way, so once.
describe('the attack on FloodgateThrottlerStorage, straight at the storage', () => {
  const closing = closeAfterEach();
  let redis: Redis;
  beforeAll(() => {
    redis = connect();
  });

  test.each([
    [0, 'one after the other'],
    [0, 'at once'],
    [20_000, 'one after the other'],
    [20_000, 'at once'],
  ])('3,000 hits straight at the storage, limit 100, blockDuration %i, %s: 100 admitted', async (blockDuration, how) => {
    const ours = new FloodgateThrottlerStorage({ redis, prefix: uniquePrefix('throttler-direct'), failure: 'closed', timeoutMs: 10_000 });
    const theirs = throttlerOnClock();
    closing(theirs);
    closing({ close: () => ours.onApplicationShutdown() });
    const admittedBy = async (storage: ThrottlerStorage): Promise<number> => {
      const one = () => storage.increment('client', TTL, 100, blockDuration, 'default');
      const records = [];
      if (how === 'at once') records.push(...(await Promise.all(Array.from({ length: 3000 }, one))));
      else for (let i = 0; i < 3000; i++) records.push(await one());
      return records.filter((r) => !r.isBlocked).length;
    };
    expect({ theirs: await admittedBy(theirs), ours: await admittedBy(ours) }).toEqual({ theirs: 100, ours: 100 });
  });
});
