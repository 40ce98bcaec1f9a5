import request from 'supertest';
import type { HeaderMode } from '@floodgate/core';
import { closeClients, connect, uniquePrefix, type AdapterFactory, type NeutralOptions, type TestApp } from '@floodgate/testing';
import { expressFactory } from '../../express/test/app-factory';
import { fastifyFactory } from '../../fastify/test/app-factory';
import { koaFactory } from '../../koa/test/app-factory';

/*
 * The conformance suite holds each adapter to the same expectations; this holds them to each other: the
 * same traffic against Express, Fastify and Koa gives the same statuses, rate-limit headers and bodies.
 */
const redis = connect();
const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});
afterAll(closeClients);

/*
 * Every denial here has one rule that denies it. A request two rules deny at once (the address's 5 and ada's
 * 2, both used up) shows the rule whose room comes back last, and the sliding window's buckets are 6 s of the
 * real clock: whether the address's first request and ada's first fell in one bucket or straddled two decided
 * which, app by app, since the apps run at once. So the request after the address's fifth is bob's, whose own
 * rule has room (his one request was denied, and a denied request counts in no rule).
 */
const traffic: [path: '/' | '/search', user?: string][] = [
  ['/'],
  ['/search', 'ada'],
  ['/search', 'ada'],
  ['/search', 'bob'],
  ['/'],
  ['/', 'bob'],
  ['/search'],
  ['/'],
];

async function transcript(factory: AdapterFactory, headers: HeaderMode): Promise<string[]> {
  const prefix = uniquePrefix(`same-${factory.name}`);
  const options = (extra: Partial<NeutralOptions>): NeutralOptions =>
    ({ redis, prefix, headers, limits: { limit: 5, window: '1m' }, ...extra }) as NeutralOptions;
  const app = await factory.makeApp({
    global: options({
      limits: [
        { limit: 5, window: '1m', for: 'ip' },
        { limit: 2, window: '1m', for: 'user' },
      ],
    }),
    routes: { '/search': options({ name: 'search', limits: { limit: 2, window: '1m' } }) },
  });
  apps.push(app);
  const lines: string[] = [];
  for (const [path, user] of traffic) {
    const res = await request(app.url)
      .get(path)
      .set(user ? { 'x-user': user } : {});
    const shown = Object.keys(res.headers)
      .filter((h) => /ratelimit|retry-after/.test(h))
      .sort();
    // Reset and Retry-After count down with the clock: compare that they are there, not their value.
    const timed = (h: string): boolean => h.endsWith('reset') || h === 'retry-after';
    const values = shown.map((h) => `${h}: ${timed(h) ? '#' : String(res.headers[h]).replace(/(t|reset)=\d+/g, '$1=#')}`);
    const body = JSON.stringify(res.body).replace(/retry in \d+ seconds?/, 'retry in #');
    lines.push(`${path} ${user ?? '-'} -> ${res.status} ${body} | ${values.join(' | ')}`);
  }
  return lines;
}

test.each(['draft-8', 'draft-6', 'legacy'] as const)(
  'headers %s: Express, Fastify and Koa answer the same traffic identically',
  async (mode) => {
    const [express, fastify, koa] = await Promise.all([expressFactory, fastifyFactory, koaFactory].map((f) => transcript(f, mode)));
    expect(express!.some((l) => l.includes('-> 429'))).toBe(true);
    expect(fastify).toEqual(express);
    expect(koa).toEqual(express);
  },
);
