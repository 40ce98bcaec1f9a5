import { connect as netConnect } from 'node:net';
import request from 'supertest';
import type { Limiter } from '@floodgate/core';
import { settled } from '@floodgate/core/testing';
import { capabilitiesOf, type AdapterFactory, type NeutralOptions } from '../conformance';
import { gate } from '../held';
import { suiteResources } from './suite';
import { given, restDescribe, test } from '../suite-part';
import { deadlineFactory } from '../deadline';

/*
 * Refunds a client tries to buy by how it treats its connection (docs/security.md, "Refunds bought by
 * resetting the connection"): only a response the server finished is judged by skipFailedRequests and
 * skipSuccessfulRequests; a request whose connection closed first stays counted, wherever the close
 * happened (during the check, a slowDown delay, or the handler), and in either order of rateLimit and
 * slowDown on one limiter. Where each request is is known (a gate it waits on), never guessed with a
 * sleep; what its close set off is awaited with settled().
 */

/**
 * Sends a whole GET, then resets the connection (RST) as soon as `ready` resolves or the server's answer
 * starts arriving. Resolves when the socket has closed.
 */
function resetWhen(url: string, headers: Record<string, string>, ready: Promise<void>): Promise<void> {
  const { hostname, port } = new URL(url);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return new Promise<void>((resolve) => {
    const socket = netConnect({ host: hostname, port: Number(port) });
    socket.on('data', () => socket.resetAndDestroy());
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
    socket.on('connect', () => {
      socket.write(`GET / HTTP/1.1\r\nHost: ${hostname}\r\n${lines.join('')}Connection: close\r\n\r\n`);
      void ready.then(() => socket.resetAndDestroy());
    });
  });
}

export function refundsAttacks(anyFactory: AdapterFactory): void {
  const factory = deadlineFactory(anyFactory);
  restDescribe(`${factory.name}: refunds a client buys with its connection`, () => {
    const { start, limiter } = suiteResources(factory);
    /** A refundable limiter of `limit` per minute, for the apps and to read the counts. */
    const refundable = (limit: number): Limiter => limiter('rr', { limits: { limit, window: '1m' }, refunds: true });
    const remaining = async (l: Limiter): Promise<number> => (await l.peek('ip:127.0.0.1')).remaining;

    test('30 requests reset while their handler works (skipSuccessfulRequests): the handler runs `limit` times, then 429', async () => {
      const limiter = refundable(3);
      const handlers = gate();
      // skipSuccessfulRequests: judged, an unanswered response (status 200 so far) would be a success, given back.
      const app = await start({ global: { limiter, skipSuccessfulRequests: true }, slow: handlers.slow });
      for (let i = 0; i < 30; i++) {
        // The handler counts itself and waits on the gate: the reset lands while it works (a 429 is answered at once).
        await resetWhen(app.url, { 'x-hold': '1' }, handlers.reached(handlers.waiting + 1));
        // A refund, had the close bought one, has reached Redis before the next request.
        await settled();
      }
      handlers.open();
      await settled();
      expect({ handlerRan: app.hits(), remaining: await remaining(limiter) }).toEqual({ handlerRan: 3, remaining: 0 });
      expect((await request(app.url).get('/')).status).toBe(429);
    });

    test('a close while the check itself is in flight: stays counted, as any close before the response', async () => {
      const limiter = refundable(3);
      const checking = gate();
      const identify = async (_req: unknown, defaults: string[]): Promise<string[]> => {
        await checking.slow();
        return defaults;
      };
      const app = await start({ global: { limiter, skipSuccessfulRequests: true, identify } as NeutralOptions });
      for (let i = 0; i < 3; i++) await resetWhen(app.url, {}, checking.reached(i + 1));
      // Each check finishes after its client left, counts, and is never given back.
      checking.open();
      await settled();
      expect(await remaining(limiter)).toBe(0);
      const honest = request(app.url)
        .get('/')
        .then((r) => r.status);
      await checking.reached(1);
      checking.open();
      expect(await honest).toBe(429);
    });

    given(capabilitiesOf(factory).slowDown, test).each([
      ['slowDown, then rateLimit', false],
      ['rateLimit, then slowDown', true],
    ])('one refundable limiter behind %s: leaving during the delay stays counted, a 500 is given back', async (_order, first) => {
      const limiter = refundable(3);
      // Called as a leaving client's delay is decided; its timer starts a promise callback later.
      let delayed: () => void = () => undefined;
      // Both refund options: every response the server finished is given back, so a leaving client that was
      // judged (whatever its status so far) would be too.
      const app = await start({
        rateLimitFirst: first,
        global: { limiter, skipFailedRequests: true, skipSuccessfulRequests: true },
        slowDown: {
          limiter,
          skipFailedRequests: true,
          skipSuccessfulRequests: true,
          delayAfter: 0,
          maxDelayMs: 10_000,
          delayMs: (_used, req) => {
            if (req.headers['x-leave'] === undefined) return 1;
            setImmediate(delayed);
            return 5_000;
          },
        },
      });
      // A failure the server produced: given back once, in either order.
      expect((await request(app.url).get('/').set('x-status', '500')).status).toBe(500);
      await settled();
      const afterFailure = await remaining(limiter);
      // Three clients leave during their delay (or, past the limit, get their 429 first): none is given back.
      for (let i = 0; i < 5; i++) {
        const inDelay = new Promise<void>((resolve) => (delayed = resolve));
        await resetWhen(app.url, { 'x-leave': '1' }, inDelay);
      }
      await settled();
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
