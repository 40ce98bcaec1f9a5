import type { HttpOptions } from '@floodgate/core';
import { createHttpLimiter } from '@floodgate/core/adapter';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * The per-request draft memo (http/response-headers.ts): while every limiter with headers in the process is
 * in one draft, no request object gets the memo (a property per request costs the adapters CPU); once a
 * limiter in another draft is made, a second limiter on a request writes in the first one's draft. This file
 * runs in its own module registry, so the process-wide set of drafts starts empty here.
 */
const redis = connect();
afterAll(closeClients);

const T = Date.UTC(2026, 10, 23, 12, 0, 30);
const limiterFor = (extra: Partial<HttpOptions<object>>) =>
  createHttpLimiter<object>(
    { redis, prefix: uniquePrefix('dialect'), algorithm: 'fixed-window', clock: () => T, limits: { limit: 5, window: '1m' }, ...extra },
    [],
    () => undefined,
  );

test('with one draft in use no request carries a memo; a second draft turns it on for both limiters', async () => {
  const eight = limiterFor({ headers: 'draft-8' });
  const alsoEight = limiterFor({ headers: 'draft-8' });
  const seven = [] as ReturnType<typeof limiterFor>[];
  try {
    const req = {};
    const a = await eight.decide(req, '10.0.1.1');
    const b = await alsoEight.decide(req, '10.0.1.1', a.decision);
    expect(Object.getOwnPropertySymbols(req)).toEqual([]);
    expect(b.append).toContainEqual(['RateLimit-Policy', '"1m";q=5;w=60']);
    expect(b.append).toContainEqual(['RateLimit', '"1m";r=4;t=30']);

    seven.push(limiterFor({ headers: 'draft-7' }));
    const next = {};
    const c = await seven[0]!.decide(next, '10.0.1.2');
    const d = await eight.decide(next, '10.0.1.2', c.decision);
    expect(Object.getOwnPropertySymbols(next)).toHaveLength(1);
    // The draft-8 limiter follows the draft-7 one on this request: never two syntaxes in one response.
    expect(d.append).toContainEqual(['RateLimit-Policy', '5;w=60']);
    expect([...d.set, ...d.append].every(([name, value]) => name !== 'RateLimit' || value.startsWith('limit='))).toBe(true);
  } finally {
    await Promise.all([eight, alsoEight, ...seven].map((l) => l.limiter.close()));
  }
});
