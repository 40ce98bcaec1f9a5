import request from 'supertest';
import type { CheckOptions, Limiter } from '@floodgate/core';
import { uniquePrefix } from '../clients';
import type { AdapterFactory, NeutralOptions, TestApp } from '../conformance';
import { suiteResources } from './suite';
import { restDescribe, test } from '../suite-part';
import { deadlineFactory } from '../deadline';

/*
 * Recipes of the migration guides that every adapter must honour as written (docs/security.md, "A wrapped
 * limiter's check() is honoured"): a `limiter` given as a wrapper (a Proxy, or an object inheriting from a
 * limiter) is checked through the wrapper's own check(), never around it through the limiter inside; and one
 * middleware sends a draft and the legacy headers together, counting each request once.
 */

type Check = (ids: string | readonly string[], options?: CheckOptions) => ReturnType<Limiter['check']>;

/** A check() that charges `factor` times the cost: a wrapper's own policy the adapter must not skip. */
const charging =
  (inner: Limiter, factor: number, asked: string[]): Check =>
  (ids, options) => {
    asked.push(String(ids));
    // Its own policy is over one number per request (a cost per unit is another wrapper's business).
    const cost = typeof options?.cost === 'number' ? options.cost : 1;
    return inner.check(ids, { ...options, cost: cost * factor });
  };

export function recipesAttacks(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  restDescribe(`${factory.name}: recipes of the migration guides`, () => {
    const { start, limiter: made, redis } = suiteResources(factory);
    const inner = (limit: number): Limiter => made('rc', { limits: { limit, window: '1m' } });
    const statuses = async (app: TestApp, n: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await request(app.url).get('/')).status);
      return out;
    };

    test.each([
      [
        'a Proxy over it',
        (l: Limiter, check: Check): Limiter => new Proxy(l, { get: (t, k) => (k === 'check' ? check : Reflect.get(t, k)) }),
      ],
      ['an object inheriting from it', (l: Limiter, check: Check): Limiter => Object.assign(Object.create(l) as Limiter, { check })],
    ])('a limiter wrapped as %s: every request goes through the wrapper check(), which the adapter never bypasses', async (_, wrap) => {
      const limiter = inner(6);
      const asked: string[] = [];
      // The wrapper charges 3 units a request: 2 of 6 requests fit (all 6 ran the handler when it was bypassed).
      const app = await start({ global: { limiter: wrap(limiter, charging(limiter, 3, asked)) } as NeutralOptions });
      expect(await statuses(app, 6)).toEqual([200, 200, 429, 429, 429, 429]);
      expect(app.hits()).toBe(2);
      expect(asked).toHaveLength(6);
      // A client the wrapper refused is refused by check() again, not answered around it from the block cache.
      expect(await statuses(app, 2)).toEqual([429, 429]);
      expect(asked).toHaveLength(8);
    });

    test("headers: ['draft-8', 'legacy']: one limiter sends both dialects and counts each request once", async () => {
      const app = await start({
        global: {
          redis: redis(),
          prefix: uniquePrefix(`${factory.name}-rc`),
          limits: { limit: 4, window: '1m' },
          headers: ['draft-8', 'legacy'],
        },
      });
      const got: request.Response[] = [];
      for (let i = 0; i < 5; i++) got.push(await request(app.url).get('/'));
      // The recipe this replaces (a second middleware on the same limiter) counted twice: 200 200 429 429 429.
      expect(got.map((r) => r.status)).toEqual([200, 200, 200, 200, 429]);
      expect(app.hits()).toBe(4);
      expect(got[0]!.headers).toMatchObject({
        'ratelimit-policy': '"1m";q=4;w=60',
        ratelimit: expect.stringMatching(/^"1m";r=3;t=\d+$/),
        'x-ratelimit-limit': '4',
        'x-ratelimit-remaining': '3',
        'x-ratelimit-reset': expect.stringMatching(/^\d{10}$/),
      });
      expect(got[4]!.headers).toMatchObject({
        ratelimit: expect.stringMatching(/^"1m";r=0;t=\d+$/),
        'x-ratelimit-remaining': '0',
        'retry-after': expect.stringMatching(/^\d+$/),
      });
    });
  });
}
