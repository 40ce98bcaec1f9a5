import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import Redis from 'ioredis';
import { NextRequest } from 'next/server.js';
import { resetWarnings } from '@floodgate/core/adapter';
import { closeAfterEach, connect, freePort, serveHttp, uniquePrefix } from '@floodgate/testing';
import { rateLimit, routeRateLimit, type ProxyRateLimit, type ProxyRateLimitOptions, type RouteHandler } from '@floodgate/next';

/*
 * docs/migrating/upstash-ratelimit-next.md, checked: the guide's "After" proxy and every row of its options
 * table and "Behaviour that differs", over real sockets against the test Redis. The server here hands each
 * request to the proxy as Next does (a NextRequest with the connection's address stamped by
 * @floodgate/next), then, when the proxy lets it through, to a route handler. The guide's server action line
 * is exercised in a real `next build` / `next start` by packages/next/test/next-app.test.ts.
 */
const redis = connect();
const closed = closeAfterEach();
/** A deadline no loaded machine misses, except where the deadline is the subject. */
const timeoutMs = 10_000;
/** Time held still, 3 s into a 10 s window: no window (fixed-window's is aligned to the clock) can end mid-test. */
const clock = (): number => Date.UTC(2031, 0, 1, 0, 0, 3);
const warnings: string[] = [];
const logger = { warn: (m: string) => void warnings.push(m) };
beforeEach(() => {
  resetWarnings();
  warnings.length = 0;
});

/** The guide's "After" proxy (10 per 10 s, one proxy in front), on a prefix of its own, unless `options` say otherwise. */
const proxyOf = (options: Partial<ProxyRateLimitOptions> = {}): ProxyRateLimit =>
  closed(
    rateLimit({
      redis,
      prefix: uniquePrefix('upstash'),
      name: 'api',
      limits: { limit: 10, window: '10s' },
      trustProxy: 1,
      logger,
      timeoutMs,
      clock,
      ...options,
    } as ProxyRateLimitOptions),
  );

let handled = 0;
beforeEach(() => (handled = 0));
const handler: RouteHandler<object> = () => (handled++, Response.json({ ok: true }));

/** A real server: the proxy, then (when it lets the request through) `route`, as Next runs them. Its URL. */
async function serve(
  proxy: ProxyRateLimit,
  route: (request: NextRequest) => Promise<Response> | Response = (request) => handler(request, {}),
): Promise<string> {
  const server = createServer((req, res) => {
    void (async () => {
      const request = new NextRequest(`http://localhost${req.url}`, { method: req.method, headers: req.headers as Record<string, string> });
      let response = await proxy(request);
      if (response.headers.get('x-middleware-next') === '1') {
        const answer = await route(request);
        // What Next does with the proxy's headers on a request it lets through: they reach the response.
        response.headers.forEach((value, name) => {
          if (!name.startsWith('x-middleware-')) answer.headers.set(name, value);
        });
        response = answer;
      }
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    })();
  });
  const { url } = closed(await serveHttp(server.listen(0, '127.0.0.1')));
  return url;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: unknown;
}
/** A GET of `path` from `from` (a loopback address), with `headers`. */
const get = (url: string, headers: Record<string, string> = {}, from = '127.0.0.1', path = '/api/items'): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { headers, localAddress: from, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }));
    });
    req.on('error', reject).end();
  });
const statuses = async (n: number, send: (i: number) => Promise<Answer>): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send(i)).status);
  return out;
};

test("the guide's proxy: 10 requests in 10 s, then a 429 with Retry-After, the RateLimit headers and the JSON body", async () => {
  const url = await serve(proxyOf());
  const client = { 'x-forwarded-for': '203.0.113.1' };
  const first = await get(url, client);
  expect(first.status).toBe(200);
  expect(first.headers['ratelimit-policy']).toBe('"api-10s";q=10;w=10');
  expect(first.headers['ratelimit']).toBe('"api-10s";r=9;t=11');
  expect(await statuses(9, () => get(url, client))).toEqual(Array(9).fill(200));
  const denied = await get(url, client);
  expect(denied.status).toBe(429);
  expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(denied.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: expect.stringMatching(/^Rate limit exceeded/) });
  expect(handled).toBe(10);
  // Another client behind the same proxy has its own budget.
  expect((await get(url, { 'x-forwarded-for': '203.0.113.2' })).status).toBe(200);
});

test("trustProxy: 1 reads the entry the proxy appended: a client rotating the header's first entry (the 'before' identifier) buys nothing", async () => {
  const url = await serve(proxyOf({ limits: { limit: 3, window: '10s' } }));
  // Each request names a new first entry, as a client that writes its own X-Forwarded-For does; the proxy appends the real one.
  const rotated = await statuses(6, (i) => get(url, { 'x-forwarded-for': `198.51.100.${i}, 203.0.113.9` }));
  expect(rotated).toEqual([200, 200, 200, 429, 429, 429]);
  expect(warnings).toEqual([]);
});

test('no trustProxy: the client is the connection, whatever X-Forwarded-For says', async () => {
  const url = await serve(proxyOf({ trustProxy: undefined, limits: { limit: 2, window: '10s' } }));
  expect(await statuses(3, (i) => get(url, { 'x-forwarded-for': `198.51.100.${i}` }, '127.0.0.2'))).toEqual([200, 200, 429]);
  expect((await get(url, {}, '127.0.0.3')).status).toBe(200);
  expect(warnings.filter((w) => w.includes('[forwarded-header-untrusted]'))).toHaveLength(1);
});

test.each([
  ['fixed-window', { limit: 4, window: '10s' }],
  ['token-bucket', { limit: 4, window: '10s' }],
] as const)('the options table: %s admits the limit, then denies', async (algorithm, limits) => {
  const url = await serve(proxyOf({ algorithm, limits }));
  expect(await statuses(5, () => get(url, { 'x-forwarded-for': '203.0.113.3' }))).toEqual([200, 200, 200, 200, 429]);
});

test('the options table: ratelimit.limit(id, { rate: n }) is cost: (request) => n', async () => {
  const url = await serve(proxyOf({ cost: (request: NextRequest) => Number(request.headers.get('x-rate') ?? 1) }));
  expect(await statuses(4, () => get(url, { 'x-forwarded-for': '203.0.113.4', 'x-rate': '3' }))).toEqual([200, 200, 200, 429]);
  // What is left (1) still admits a request of cost 1.
  expect((await get(url, { 'x-forwarded-for': '203.0.113.4' })).status).toBe(200);
});

test('the options table: ephemeralCache is the block cache, so a client already denied is answered without Redis', async () => {
  const proxy = proxyOf({ limits: { limit: 1, window: '10s' } });
  const sources: string[] = [];
  proxy.limiter.subscribe((event) => {
    if (event.type === 'decision') sources.push(event.source);
  });
  const url = await serve(proxy);
  expect(await statuses(3, () => get(url, { 'x-forwarded-for': '203.0.113.5' }))).toEqual([200, 429, 429]);
  expect(sources).toEqual(['redis', 'redis', 'cache']);
});

describe('the options table: timeout is timeoutMs with a failure policy, when Redis cannot answer', () => {
  let down: Redis;
  beforeEach(async () => {
    // Nothing listens on this port; disconnectTimeout: ioredis's disconnect() of a client that never connected keeps a 2 s timer otherwise.
    down = new Redis(`redis://127.0.0.1:${await freePort()}`, { disconnectTimeout: 100, maxRetriesPerRequest: 0 });
    down.on('error', () => undefined);
  });
  afterEach(() => down.disconnect());

  test("failure: 'open' (the default) lets the request through", async () => {
    const url = await serve(proxyOf({ redis: down, timeoutMs: 100 }));
    expect((await get(url, { 'x-forwarded-for': '203.0.113.6' })).status).toBe(200);
    expect(handled).toBe(1);
  });

  test("failure: 'closed' answers 503 and the route never runs", async () => {
    const url = await serve(proxyOf({ redis: down, timeoutMs: 100, failure: 'closed' }));
    expect((await get(url, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(503);
    expect(handled).toBe(0);
  });
});

test("behaviour that differs: headers: 'legacy' gives the X-RateLimit-* headers the 'before' wrote", async () => {
  const url = await serve(proxyOf({ headers: 'legacy' }));
  const answer = await get(url, { 'x-forwarded-for': '203.0.113.8' });
  expect(answer.headers['x-ratelimit-limit']).toBe('10');
  expect(answer.headers['x-ratelimit-remaining']).toBe('9');
  expect(Number(answer.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
  expect(answer.headers['ratelimit']).toBeUndefined();
});

test("a route handler: export const POST = routeRateLimit({ redis, name: 'search', limits })(handler)", async () => {
  const limit = closed(
    routeRateLimit({
      redis,
      prefix: uniquePrefix('upstash'),
      name: 'search',
      limits: { limit: 2, window: '10s' },
      logger,
      timeoutMs,
      clock,
    }),
  );
  const POST = limit(handler);
  // The proxy lets everything through here (a limit it does not reach); the route's own limit answers.
  const url = await serve(proxyOf({ limits: { limit: 1_000, window: '10s' } }), (request) => POST(request, {}));
  expect(await statuses(3, () => get(url, {}, '127.0.0.4'))).toEqual([200, 200, 429]);
  expect(handled).toBe(2);
});
