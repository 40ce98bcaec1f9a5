import { resetWarnings } from '@floodgate/core/adapter';
import { createLimiter } from '@floodgate/core';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { rateLimit, type RateLimitBaseOptions, type RateLimitOptions } from '@floodgate/trpc';
import { makeRouter, serveRouter, type Context, type Meta } from './app';

/*
 * X-Forwarded-For on the standalone server, which has no notion of a proxy: it counts only through the
 * middleware's trustProxy (core's web client address: addresses, ranges or a hop count). A spoofed header
 * never buys a client a new budget.
 */

const redis = connect();
// Every limiter here waits 10 s for Redis: the deadline is not these tests' subject (a loaded machine's first check can take longer).
const closing = closeAfterEach();
beforeEach(() => resetWarnings());

async function serve(extra: RateLimitBaseOptions<Context, Meta>) {
  const warnings: string[] = [];
  const seen: string[][] = [];
  const options = {
    redis,
    timeoutMs: 10_000,
    prefix: uniquePrefix('trpc'),
    limits: { limit: 2, window: '1m' },
    logger: { warn: (message: string) => warnings.push(message) },
    identify: (_call: unknown, defaults: string[]) => (seen.push(defaults), defaults),
    ...extra,
  } as RateLimitOptions<Context, Meta>;
  const { router } = makeRouter(closing(rateLimit(options)));
  const { url } = closing(await serveRouter(router));
  const get = async (forwarded: string) => (await fetch(`${url}/hit`, { headers: { 'x-forwarded-for': forwarded } })).status;
  return { get, warnings, seen };
}

test('without trustProxy a spoofed X-Forwarded-For is ignored, with one named warning: a new header each call buys nothing', async () => {
  const app = await serve({});
  expect([await app.get('198.51.100.1'), await app.get('198.51.100.2'), await app.get('198.51.100.3')]).toEqual([200, 200, 429]);
  expect(app.seen.every(([ip]) => ip === 'ip:127.0.0.1')).toBe(true);
  expect(app.warnings).toHaveLength(1);
  expect(app.warnings[0]).toMatch(/forwarded-header-untrusted/);
});

test("trustProxy 'loopback': the entry the proxy appended is the client; one a client wrote at the front is not", async () => {
  const app = await serve({ trustProxy: 'loopback' });
  expect(await app.get('198.51.100.1')).toBe(200);
  expect(await app.get('6.6.6.6, 198.51.100.1')).toBe(200);
  expect(await app.get('7.7.7.7, 198.51.100.1')).toBe(429);
  expect(await app.get('198.51.100.2')).toBe(200);
  expect(app.seen.map(([ip]) => ip)).toEqual(['ip:198.51.100.1', 'ip:198.51.100.1', 'ip:198.51.100.1', 'ip:198.51.100.2']);
});

test('trustProxy is validated at construction, and cannot stand beside clientAddress', () => {
  const limiter = closing(createLimiter({ redis, timeoutMs: 10_000, prefix: uniquePrefix('trpc'), limits: { limit: 1, window: '1m' } }));
  expect(() => rateLimit({ limiter, trustProxy: '10.0.0.1/8' })).toThrow(expect.objectContaining({ option: 'trustProxy' }));
  expect(() => rateLimit({ limiter, trustProxy: -1 })).toThrow(expect.objectContaining({ option: 'trustProxy' }));
  expect(() => rateLimit({ limiter, trustProxy: 1, clientAddress: () => undefined })).toThrow(
    expect.objectContaining({ option: 'trustProxy' }),
  );
});
