import { connect as netConnect } from 'node:net';
import request from 'supertest';
import type { Limiter } from '@floodgate/core';
import type { AdapterFactory, NeutralOptions } from '../conformance';
import { suiteResources } from './suite';
import { restDescribe, test } from '../suite-part';

/*
 * Refunds a client tries to buy by how it treats its connection (docs/security.md, "Refunds bought by
 * resetting the connection"): only a response the server finished is judged by skipFailedRequests and
 * skipSuccessfulRequests; a request whose connection closed first stays counted, wherever the close
 * happened (during the check, a slowDown delay, or the handler), and in either order of rateLimit and
 * slowDown on one limiter.
 */

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Sends a whole GET, then resets the connection (RST) as soon as `ready()` is true, or the server's answer
 * starts arriving, or after `capMs`. Resolves when the socket has closed.
 */
function resetWhen(url: string, headers: Record<string, string>, ready: () => boolean, capMs = 5_000): Promise<void> {
  const { hostname, port } = new URL(url);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return new Promise<void>((resolve) => {
    const socket = netConnect({ host: hostname, port: Number(port) });
    let answered = false;
    socket.on('data', () => void (answered = true));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
    socket.on('connect', () => {
      socket.write(`GET / HTTP/1.1\r\nHost: ${hostname}\r\n${lines.join('')}Connection: close\r\n\r\n`);
      const until = performance.now() + capMs;
      const poll = (): void => {
        if (ready() || answered || performance.now() > until) socket.resetAndDestroy();
        else setTimeout(poll, 2);
      };
      poll();
    });
  });
}

export function refundsAttacks(factory: AdapterFactory): void {
  restDescribe(`${factory.name}: refunds a client buys with its connection`, () => {
    const { start, limiter } = suiteResources(factory);
    /** A refundable limiter of `limit` per minute, for the apps and to read the counts. */
    const refundable = (limit: number): Limiter => limiter('rr', { limits: { limit, window: '1m' }, refunds: true });
    const remaining = async (l: Limiter): Promise<number> => (await l.peek('ip:127.0.0.1')).remaining;
    /** The count once it reaches `expected` (a refund lands just after its response), or as it is after 3 s. */
    const remainingOnce = async (l: Limiter, expected: number): Promise<number> => {
      const until = performance.now() + 3_000;
      for (;;) {
        const now = await remaining(l);
        if (now === expected || performance.now() > until) return now;
        await sleep(10);
      }
    };

    test('30 requests reset while their handler works (skipFailedRequests): the handler runs `limit` times, then 429', async () => {
      const limiter = refundable(3);
      const app = await start({ global: { limiter, skipFailedRequests: true } });
      for (let i = 0; i < 30; i++) {
        const before = app.hits();
        // The handler counts itself when it starts, then works for 300 ms: the reset lands during that work.
        await resetWhen(app.url, { 'x-delay': '300' }, () => app.hits() > before);
        // Time for a refund, had the close bought one, to reach Redis before the next request.
        await sleep(30);
      }
      await sleep(100);
      expect({ handlerRan: app.hits(), remaining: await remaining(limiter) }).toEqual({ handlerRan: 3, remaining: 0 });
      expect((await request(app.url).get('/')).status).toBe(429);
    });

    test('a close while the check itself is in flight: stays counted, as any close before the response', async () => {
      const limiter = refundable(3);
      let checking = 0;
      const identify = async (_req: unknown, defaults: string[]): Promise<string[]> => {
        checking++;
        await sleep(300);
        return defaults;
      };
      const app = await start({ global: { limiter, skipFailedRequests: true, identify } as NeutralOptions });
      for (let i = 0; i < 3; i++) {
        const before = checking;
        await resetWhen(app.url, {}, () => checking > before);
      }
      // Each check finishes after its client left, counts, and is never given back.
      await sleep(500);
      expect(await remaining(limiter)).toBe(0);
      expect((await request(app.url).get('/')).status).toBe(429);
    });

    test.each([
      ['slowDown, then rateLimit', false],
      ['rateLimit, then slowDown', true],
    ])('one refundable limiter behind %s: leaving during the delay stays counted, a 500 is given back', async (_order, first) => {
      const limiter = refundable(3);
      let delaying = 0;
      const app = await start({
        rateLimitFirst: first,
        global: { limiter, skipFailedRequests: true },
        slowDown: {
          limiter,
          skipFailedRequests: true,
          delayAfter: 0,
          maxDelayMs: 10_000,
          delayMs: (_used, req) => {
            if (req.headers['x-leave'] === undefined) return 1;
            delaying++;
            return 5_000;
          },
        },
      });
      // A failure the server produced: given back once, in either order.
      expect((await request(app.url).get('/').set('x-status', '500')).status).toBe(500);
      const afterFailure = await remainingOnce(limiter, 3);
      // Three clients leave during their delay (or, past the limit, get their 429 first): none is given back.
      for (let i = 0; i < 5; i++) {
        const before = delaying;
        await resetWhen(app.url, { 'x-leave': '1' }, () => delaying > before);
      }
      await sleep(100);
      const afterLeaving = await remaining(limiter);
      const honest = (await request(app.url).get('/')).status;
      expect({ afterFailure, afterLeaving, honest, handlerRan: app.hits() }).toEqual({
        afterFailure: 3,
        afterLeaving: 0,
        honest: 429,
        handlerRan: 1,
      });
    });
  });
}
