import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpOptions } from '@floodgate/core';
import { createHttpLimiter, whenResponseDone, type HttpLimiter } from '@floodgate/core/adapter';
import { abandon, closeClients, connect, uniquePrefix } from '@floodgate/testing';

/*
 * docs/security.md, "Refunds bought by resetting the connection", in core: the smallest adapter over
 * node:http (decide, whenResponseDone, completed) shows the rule every adapter inherits. Only a response the
 * server finished is judged by the refund options; a connection closed first leaves the request counted.
 * The adapters' own proof, over each framework: packages/testing/src/attacks/refunds.ts.
 */
const redis = connect();
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(closeClients);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A node:http app with one limiter (3 a minute) whose handler counts itself and answers `x-status` after `x-delay` ms. */
async function serve(
  options: Partial<HttpOptions<IncomingMessage>>,
): Promise<{ url: string; hits: () => number; remaining: () => Promise<number> }> {
  const http: HttpLimiter<IncomingMessage> = createHttpLimiter<IncomingMessage>({
    redis,
    prefix: uniquePrefix('refund-attack'),
    limits: { limit: 3, window: '1m' },
    ...options,
  });
  let hits = 0;
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    void Promise.resolve(http.decide(req, req.socket.remoteAddress)).then((outcome) => {
      if (outcome.own !== undefined) whenResponseDone(res, (finished) => http.completed(outcome, finished, res.statusCode, [req, res]));
      if (outcome.action !== 'next') return void res.writeHead(outcome.status).end();
      hits++;
      setTimeout(() => res.writeHead(Number(req.headers['x-status'] ?? 200)).end(), Number(req.headers['x-delay'] ?? 0));
    });
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await http.limiter.close();
    },
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits: () => hits,
    remaining: async () => (await http.limiter.peek('ip:127.0.0.1')).remaining,
  };
}

const get = (url: string, headers: Record<string, string> = {}): Promise<number> =>
  fetch(url, { headers }).then(async (r) => (await r.arrayBuffer(), r.status));

test.each(['skipFailedRequests', 'skipSuccessfulRequests'] as const)(
  '%s: 10 clients that leave while the handler works run it `limit` times; none is given back',
  async (option) => {
    const app = await serve({ [option]: true });
    for (let i = 0; i < 10; i++) {
      // The handler works 400 ms; the client leaves after 100, once its check is long done.
      await abandon(app.url, { 'x-delay': '400' }, 100);
      await sleep(30);
    }
    await sleep(450);
    expect({ handlerRan: app.hits(), remaining: await app.remaining() }).toEqual({ handlerRan: 3, remaining: 0 });
    expect(await get(app.url)).toBe(429);
  },
);

test('a response the server finished is still judged: a 500 is given back under skipFailedRequests, a 200 is not', async () => {
  const app = await serve({ skipFailedRequests: true });
  expect(await get(app.url, { 'x-status': '500' })).toBe(500);
  expect(await get(app.url)).toBe(200);
  for (let i = 0; i < 100 && (await app.remaining()) !== 2; i++) await sleep(10);
  expect(await app.remaining()).toBe(2);
});

test('whenResponseDone on a response already closed (the client left during the check) reports it at once, unfinished', async () => {
  const seen: boolean[] = [];
  const server = createServer((_req, res) => {
    res.once('close', () => whenResponseDone(res, (finished) => seen.push(finished)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ close: () => new Promise((resolve) => server.close(() => resolve())) });
  await abandon(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {}, 50);
  for (let i = 0; i < 100 && seen.length === 0; i++) await sleep(10);
  expect(seen).toEqual([false]);
});
