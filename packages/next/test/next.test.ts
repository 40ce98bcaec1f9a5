import { createServer, type Server } from 'node:http';
import { connect as netConnect } from 'node:net';
import { NextRequest } from 'next/server.js';
import { resetWarnings } from '@floodgate/core/adapter';
import { settled } from '@floodgate/core/testing';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { actionRateLimit, chain, rateLimit, routeRateLimit } from '@floodgate/next';
import { PEER_HEADER } from '../src/peer';
import { compileMatcher } from '../src/matcher';

/*
 * The glue of @floodgate/next, quickly, against a real Redis: the proxy's and a route's answers to Web
 * requests as Next hands them over, the peer stamp over a real socket, and option validation. The whole
 * of it in a real `next build` / `next start` is next-app.test.ts (second tier).
 */
const redis = connect();
const closing = closeAfterEach();
const warnings: string[] = [];
const logger = { warn: (m: string) => void warnings.push(m) };
/** A deadline no loaded machine misses: a first check that outran the default would fail open, and the verdicts change. */
const timeoutMs = 10_000;
beforeEach(() => {
  resetWarnings();
  warnings.length = 0;
});

/** A request as Next hands it to the proxy or a route: its peer stamped, X-Forwarded-For as the client sent it (or Next's copy of the peer). */
function from(peer: string, path = '/api/x', forwarded = peer, init: { method?: string } = {}): NextRequest {
  return new NextRequest(`http://localhost${path}`, { ...init, headers: { [PEER_HEADER]: peer, 'x-forwarded-for': forwarded } });
}

test("the proxy lets requests through with their headers, then answers 429 with every adapter's body and headers", async () => {
  const proxy = closing(rateLimit({ redis, prefix: uniquePrefix('nxproxy'), limits: { limit: 2, window: '1m' }, logger, timeoutMs }));
  const first = await proxy(from('192.0.2.1'));
  expect(first.headers.get('x-middleware-next')).toBe('1');
  expect(first.headers.get('ratelimit-policy')).toBe('"1m";q=2;w=60');
  await proxy(from('192.0.2.1'));
  const denied = await proxy(from('192.0.2.1'));
  expect(denied.status).toBe(429);
  expect(denied.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(denied.headers.get('ratelimit-policy')).toBe('"1m";q=2;w=60');
  expect(await denied.json()).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: expect.stringMatching(/^Rate limit exceeded/),
  });
  expect((await proxy(from('192.0.2.2'))).status).toBe(200);
});

test('no trustProxy: a spoofed X-Forwarded-For is the same client, and the header is warned about once', async () => {
  const proxy = closing(rateLimit({ redis, prefix: uniquePrefix('nxspoof'), limits: { limit: 2, window: '1m' }, logger, timeoutMs }));
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await proxy(from('192.0.2.3', '/', `198.51.100.${i}`))).status);
  expect(statuses).toEqual([200, 200, 429, 429]);
  expect(warnings.filter((w) => w.includes('[forwarded-header-untrusted]'))).toHaveLength(1);
});

test('trustProxy as a hop count: the entry the proxy appended is the client; a forged one to its left changes nothing', async () => {
  const proxy = closing(
    rateLimit({ redis, prefix: uniquePrefix('nxhops'), limits: { limit: 1, window: '1m' }, trustProxy: 1, logger, timeoutMs }),
  );
  expect((await proxy(from('10.0.0.1', '/', '6.6.6.6, 203.0.113.1'))).status).toBe(200);
  expect((await proxy(from('10.0.0.1', '/', '7.7.7.7, 203.0.113.1'))).status).toBe(429);
  expect((await proxy(from('10.0.0.1', '/', '203.0.113.2'))).status).toBe(200);
  expect(warnings).toEqual([]);
});

test('matcher: a limit applies to the paths it names, as a proxy config.matcher writes them', async () => {
  const matches = compileMatcher(['/api/:path*', '/login'])!;
  expect(['/api', '/api/a/b', '/login'].map(matches)).toEqual([true, true, true]);
  expect(['/apix', '/login/x', '/'].map(matches)).toEqual([false, false, false]);
  const proxy = closing(
    rateLimit({ redis, prefix: uniquePrefix('nxmatch'), limits: { limit: 1, window: '1m' }, matcher: '/login', logger, timeoutMs }),
  );
  for (let i = 0; i < 3; i++) expect((await proxy(from('192.0.2.4', '/home'))).headers.get('ratelimit')).toBeNull();
  expect((await proxy(from('192.0.2.4', '/login'))).status).toBe(200);
  expect((await proxy(from('192.0.2.4', '/login'))).status).toBe(429);
});

test('chain: the first denial answers; a request every limit lets through carries the headers of both', async () => {
  const general = closing(rateLimit({ redis, prefix: uniquePrefix('nxgen'), limits: { limit: 5, window: '1m' }, logger, timeoutMs }));
  const login = closing(
    rateLimit({ redis, prefix: uniquePrefix('nxlog'), limits: { limit: 1, window: '10s' }, matcher: '/login', logger, timeoutMs }),
  );
  const proxy = chain(general, login);
  const first = await proxy(from('192.0.2.5', '/login'));
  expect(first.headers.get('ratelimit-policy')).toBe('"1m";q=5;w=60, "10s";q=1;w=10');
  expect((await proxy(from('192.0.2.5', '/login'))).status).toBe(429);
  expect((await proxy(from('192.0.2.5', '/'))).status).toBe(200);
});

test('a route: its handler runs only when admitted, and its response carries the headers', async () => {
  const limit = closing(routeRateLimit({ redis, prefix: uniquePrefix('nxroute'), limits: { limit: 1, window: '1m' }, logger, timeoutMs }));
  let runs = 0;
  const GET = limit(() => {
    runs++;
    return Response.json({ ok: true });
  });
  const ok = await GET(from('192.0.2.6'), {});
  expect(ok.headers.get('ratelimit')).toMatch(/r=0/);
  expect((await GET(from('192.0.2.6'), {})).status).toBe(429);
  expect(runs).toBe(1);
  // Response.redirect's headers are immutable: the headers go on a copy.
  const redirect = limit(() => Response.redirect('http://localhost/elsewhere', 307));
  const moved = await redirect(from('192.0.2.7'), {});
  expect([moved.status, moved.headers.get('location'), moved.headers.get('ratelimit-policy')]).toEqual([
    307,
    'http://localhost/elsewhere',
    '"1m";q=1;w=60',
  ]);
});

describe('a streamed route response settles when its body has been read to the end', () => {
  const streamed = (chunks: number): Response =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < chunks; i++) controller.enqueue(new TextEncoder().encode(`${i}\n`));
          controller.close();
        },
      }),
    );

  test('read to the end: the real cost; cancelled: the estimate stays until the settle, which still runs', async () => {
    const limit = closing(
      routeRateLimit({
        redis,
        prefix: uniquePrefix('nxsettle'),
        limits: { limit: 10, window: '1m' },
        cost: () => 5,
        settle: (request) => Number(request.nextUrl.searchParams.get('n')),
        logger,
        timeoutMs,
      }),
    );
    const GET = limit((request) => streamed(Number(request.nextUrl.searchParams.get('n'))));
    const res = await GET(from('192.0.2.8', '/s?n=2'), {});
    // Nothing settled while the body is unread: the estimate holds.
    expect((await limit.limiter.peek('ip:192.0.2.8')).remaining).toBe(5);
    expect(await res.text()).toBe('0\n1\n');
    await settled();
    expect((await limit.limiter.peek('ip:192.0.2.8')).remaining).toBe(8);
    const cancelled = await GET(from('192.0.2.8', '/s?n=1'), {});
    await cancelled.body!.cancel();
    await settled();
    expect((await limit.limiter.peek('ip:192.0.2.8')).remaining).toBe(7);
  });

  test('a handler that throws ends the response unfinished: no refund', async () => {
    const limit = closing(
      routeRateLimit({
        redis,
        prefix: uniquePrefix('nxthrow'),
        limits: { limit: 3, window: '1m' },
        skipFailedRequests: true,
        logger,
        timeoutMs,
      }),
    );
    const GET = limit(() => {
      throw new Error('boom');
    });
    await expect(GET(from('192.0.2.9'), {})).rejects.toThrow('boom');
    await settled();
    expect((await limit.limiter.peek('ip:192.0.2.9')).remaining).toBe(2);
    const failing = limit(() => new Response('no', { status: 500 }));
    await (await failing(from('192.0.2.9'), {})).text();
    await settled();
    expect((await limit.limiter.peek('ip:192.0.2.9')).remaining).toBe(2);
  });
});

test('the peer stamp: a client that sends the peer header itself is overwritten by its real address', async () => {
  const server: Server = createServer((req, res) => res.end(String(req.headers[PEER_HEADER])));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { [PEER_HEADER]: '6.6.6.6' } });
    expect(await res.text()).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('the peer stamp: a client that resets right after its request, on a connection the server accepted, is still known', async () => {
  const stamped: string[] = [];
  let all!: () => void;
  const arrived = new Promise<void>((resolve) => (all = resolve));
  const server: Server = createServer((req, res) => {
    stamped.push(String(req.headers[PEER_HEADER]));
    if (stamped.length === 20) all();
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as { port: number };
    // 250 ms after the client's connect the server has accepted it, even on a loaded machine; then the whole
    // request and a reset (RST) at once. Node reads a peer's address lazily: read at the request, it was gone.
    for (let i = 0; i < 20; i++) {
      const socket = netConnect({ host: '127.0.0.1', port });
      socket.on('error', () => undefined);
      socket.on('connect', () =>
        setTimeout(() => {
          socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
          socket.resetAndDestroy();
        }, 250),
      );
    }
    await arrived;
    // Before: 20 empty stamps (every one of them ip:unknown).
    expect(stamped.filter((peer) => !/^(::ffff:)?127\.0\.0\.1$/.test(peer))).toEqual([]);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test.each([
  [{ matcher: 'api' }, 'matcher'],
  [{ matcher: ['/ok', 3] }, 'matcher[1]'],
  [{ matcher: '/api/(' }, 'matcher'],
  [{ handler: 'no' }, 'handler'],
  [{ skipSuccessfulRequests: true }, 'skipSuccessfulRequests'],
  [{ settle: () => 1 }, 'settle'],
  [{ trustProxy: '10.0.0.1/8' }, 'trustProxy'],
  [{ trustProxy: -1 }, 'trustProxy'],
])('the proxy refuses %j, naming %s', (extra, option) => {
  expect(() => rateLimit({ redis, prefix: uniquePrefix('nxbad'), limits: { limit: 1, window: '1m' }, ...(extra as object) })).toThrow(
    expect.objectContaining({ option }),
  );
});

test('options a server action cannot honour are refused, naming them', () => {
  for (const [extra, option] of [
    [{ statusCode: 503 }, 'statusCode'],
    [{ headers: 'draft-7' }, 'headers'],
    [{ skipFailedRequests: true }, 'skipFailedRequests'],
  ] as const) {
    expect(() =>
      actionRateLimit({ redis, prefix: uniquePrefix('nxact'), limits: { limit: 1, window: '1m' }, ...(extra as object) }),
    ).toThrow(expect.objectContaining({ option }));
  }
  expect(() => chain({} as never)).toThrow(expect.objectContaining({ option: 'chain[0]' }));
});

test("a proxy's handler answers a denial in its own way, with Floodgate's headers, even on an immutable Response", async () => {
  const proxy = closing(
    rateLimit({
      redis,
      prefix: uniquePrefix('nxhandler'),
      limits: { limit: 1, window: '1m' },
      logger,
      timeoutMs,
      handler: (_request, decision) =>
        Response.redirect(`http://localhost/slow-down?ms=${decision.retryAfterMs > 0 ? 'later' : 'now'}`, 307),
    }),
  );
  await proxy(from('192.0.2.10'));
  const denied = await proxy(from('192.0.2.10'));
  expect([denied.status, denied.headers.get('location'), denied.headers.get('retry-after') !== null]).toEqual([
    307,
    'http://localhost/slow-down?ms=later',
    true,
  ]);
});

test('a polluted Object.prototype cannot switch the proxy or a route off: options are read as own properties', async () => {
  // Next cannot serve under it (its Fetch Request reads `mode` off the prototype and throws): the requests are made first.
  const proxy = closing(rateLimit({ redis, prefix: uniquePrefix('nxpp'), limits: { limit: 3, window: '1m' }, logger, timeoutMs }));
  const limit = closing(routeRateLimit({ redis, prefix: uniquePrefix('nxpp'), limits: { limit: 3, window: '1m' }, logger, timeoutMs }));
  const route = limit(() => Response.json({ ok: true }));
  const requests = Array.from({ length: 8 }, () => from('192.0.2.20'));
  const proto = Object.prototype as Record<string, unknown>;
  const polluted = { mode: 'shadow', unidentified: 'allow', skip: () => true, penalty: 'yes', blockCache: 'no' };
  Object.assign(proto, polluted);
  try {
    const statuses = [];
    for (const request of requests.slice(0, 4)) statuses.push((await proxy(request)).status);
    for (const request of requests.slice(4)) statuses.push((await route(request, {})).status);
    expect(statuses).toEqual([200, 200, 200, 429, 200, 200, 200, 429]);
  } finally {
    for (const key of Object.keys(polluted)) delete proto[key];
  }
});
