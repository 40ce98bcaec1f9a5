import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpOptions } from '@floodgate/core';
import { createHttpLimiter, whenResponseDone, type HttpLimiter } from '@floodgate/core/adapter';
import { settled } from '@floodgate/core/testing';
import { closeClients, connect, gate, leavingGet, uniquePrefix, type Gate } from '@floodgate/testing';

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

/** A node:http app with one limiter (3 a minute) whose handler counts itself and answers `x-status`, once `held` opens if given. */
async function serve(
  options: Partial<HttpOptions<IncomingMessage>>,
  held?: Gate,
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
      // The status is set as the handler starts: a response judged before it ends would be judged by it.
      res.statusCode = Number(req.headers['x-status'] ?? 200);
      const answer = (): void => void res.end();
      if (held === undefined) answer();
      else void held.slow().then(answer);
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
    const handlers = gate();
    const app = await serve({ [option]: true }, handlers);
    // Responses this option would give back, were they judged: failures for skipFailedRequests.
    const status = { 'x-status': option === 'skipFailedRequests' ? '500' : '200' };
    for (let i = 0; i < 10; i++) {
      const client = leavingGet(app.url, '/', status);
      // Admitted, it reaches the handler, and the client leaves while it works; refused, it is answered at once.
      await Promise.race([client.gone, handlers.reached(handlers.waiting + 1)]);
      client.leave();
      await client.gone;
      await settled(); // its end is judged before the next client comes
    }
    handlers.open(); // the handlers finish, into closed connections
    await settled();
    expect({ handlerRan: app.hits(), remaining: await app.remaining() }).toEqual({ handlerRan: 3, remaining: 0 });
    expect(await get(app.url)).toBe(429);
  },
);

test('a response the server finished is still judged: a 500 is given back under skipFailedRequests, a 200 is not', async () => {
  const app = await serve({ skipFailedRequests: true });
  expect(await get(app.url, { 'x-status': '500' })).toBe(500);
  expect(await get(app.url)).toBe(200);
  await settled();
  expect(await app.remaining()).toBe(2);
});

test('whenResponseDone on a response already closed (the client left during the check) reports it at once, unfinished', async () => {
  let arrived!: () => void;
  const arrival = new Promise<void>((resolve) => (arrived = resolve));
  const reported = new Promise<boolean[]>((resolve) => {
    const server = createServer((_req, res) => {
      res.once('close', () => {
        const seen: boolean[] = [];
        whenResponseDone(res, (finished) => seen.push(finished));
        resolve(seen); // reported synchronously, or not at all
      });
      arrived();
    });
    server.listen(0, '127.0.0.1', () => {
      const client = leavingGet(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, '/');
      void arrival.then(() => client.leave());
    });
    servers.push({ close: () => new Promise((done) => server.close(() => done())) });
  });
  expect(await reported).toEqual([false]);
});
