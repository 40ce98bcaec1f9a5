import { Hono } from 'hono';
import request from 'supertest';
import { resetWarnings } from '@floodgate/core/adapter';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { concurrency, rateLimit, slowDown, type RateLimitBaseOptions, type RateLimitOptions } from '@floodgate/hono';
import { serveHono } from './serve';

/*
 * The client address (docs/hono.md, "Client address and proxies"): the connection's peer, and
 * X-Forwarded-For only through `trustProxy`. Attacks over real sockets: a client that writes the header
 * itself must never change who is counted.
 */
const redis = connect();
const closing = closeAfterEach();
const warnings: string[] = [];
beforeEach(() => {
  resetWarnings();
  warnings.length = 0;
});

const options = (extra: RateLimitBaseOptions = {}): RateLimitOptions =>
  ({
    redis,
    prefix: uniquePrefix('honotrust'),
    limits: { limit: 2, window: '1m' },
    logger: { warn: (m: string) => void warnings.push(m) },
    ...extra,
  }) as RateLimitOptions;

/** An app that answers the decision's identifier, so a test sees who was counted. */
async function serve(extra: RateLimitBaseOptions = {}): Promise<string> {
  const limiter = closing(rateLimit(options(extra)));
  const app = new Hono();
  app.use(limiter);
  app.get('/', (c) => c.text(String(c.get('rateLimit')?.identifier)));
  return closing(await serveHono(app)).url;
}

const from = (url: string, xff?: string): Promise<request.Response> => {
  const req = request(url).get('/');
  return xff === undefined ? req : req.set('X-Forwarded-For', xff);
};

test('no trustProxy: a new X-Forwarded-For on every request buys nothing; one warning names the setting', async () => {
  const url = await serve();
  const seen = [];
  for (const ip of ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4']) seen.push((await from(url, ip)).status);
  expect(seen).toEqual([200, 200, 429, 429]);
  expect((await from(url)).status).toBe(429);
  expect(warnings.filter((w) => w.includes('[forwarded-header-untrusted]') && w.includes('which trustProxy does not trust'))).toHaveLength(
    1,
  );
});

test('trustProxy naming other proxies: a direct client forging X-Forwarded-For is still its own address, with a warning naming it', async () => {
  const url = await serve({ trustProxy: ['10.0.0.0/8', '192.0.2.7'] });
  const res = await from(url, '10.1.2.3');
  expect(res.text).toBe('ip:127.0.0.1');
  expect((await from(url, '203.0.113.9')).text).toBe('ip:127.0.0.1');
  expect((await from(url, '198.51.100.1')).status).toBe(429);
  expect(warnings.filter((w) => w.includes('[forwarded-header-untrusted]') && w.includes('from 127.0.0.1'))).toHaveLength(1);
});

test('behind trusted proxies the hops are read from the right: a forged leftmost entry is never the client', async () => {
  const url = await serve({ trustProxy: ['loopback', '10.0.0.0/8'], limits: { limit: 1, window: '1m' } });
  expect((await from(url, '198.51.100.7')).text).toBe('ip:198.51.100.7');
  // The client wrote the first entry; the proxy chain appended the real client, then an inner proxy.
  expect((await from(url, '1.1.1.1, 203.0.113.5, 10.9.9.9')).text).toBe('ip:203.0.113.5');
  const forged = [];
  for (const spoof of ['2.2.2.2', '3.3.3.3', '4.4.4.4']) forged.push((await from(url, `${spoof}, 203.0.113.5, 10.9.9.9`)).status);
  expect(forged).toEqual([429, 429, 429]);
  // Every hop trusted: the leftmost is the client.
  expect((await from(url, '10.1.1.1, 10.2.2.2')).text).toBe('ip:10.1.1.1');
  expect(warnings).toEqual([]);
});

test('an IPv6 proxy range, and the IPv4-mapped form of a trusted IPv4 peer', async () => {
  const url = await serve({ trustProxy: ['127.0.0.1', '2001:db8::/32'] });
  expect((await from(url, '2001:db8::1, 2001:db8:ffff::2')).text).toBe('ip:2001:db8::/56');
  const mapped = await serve({ trustProxy: '::ffff:127.0.0.1' });
  expect((await from(mapped, '203.0.113.1')).text).toBe('ip:203.0.113.1');
});

test('a trustProxy that covers every address is warned about once, at construction', async () => {
  await serve({ trustProxy: ['0.0.0.0/0'] });
  await serve({ trustProxy: ['::/0'] });
  expect(warnings.filter((w) => w.includes('[trust-proxy-all]'))).toHaveLength(1);
});

test.each([
  ['not an address', ['10.0.0.1', 'proxy.internal'], 'trustProxy[1]'],
  ['a short IPv4 form', ['127.1'], 'trustProxy[0]'],
  ['a prefix too long', ['10.0.0.0/33'], 'trustProxy[0]'],
  ['an IPv6 prefix too long', ['2001:db8::/129'], 'trustProxy[0]'],
  ['a prefix that is not a number', ['10.0.0.0/8x'], 'trustProxy[0]'],
  ['host bits past the prefix', ['10.0.0.1/8'], 'trustProxy[0]'],
  ['IPv6 host bits past the prefix', ['2001:db8::1/32'], 'trustProxy[0]'],
  ['a number', 1, 'trustProxy'],
  ['true', true, 'trustProxy'],
  ['a non-string entry', [10], 'trustProxy[0]'],
])('trustProxy with %s is a ConfigError naming it, in every middleware', (_name, value, option) => {
  const bad = { trustProxy: value as string[] };
  expect(() => rateLimit(options(bad))).toThrow(expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option }));
  expect(() => slowDown(options(bad))).toThrow(expect.objectContaining({ option }));
  expect(() => concurrency({ redis, prefix: uniquePrefix('honotrust'), max: 1, ...bad })).toThrow(expect.objectContaining({ option }));
});

test('getConnInfo that is not a function is a ConfigError naming it', () => {
  expect(() => rateLimit(options({ getConnInfo: 'node' as never }))).toThrow(expect.objectContaining({ option: 'getConnInfo' }));
});
