import { once } from 'node:events';
import { UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { WsAdapter } from '@nestjs/platform-ws';
import WebSocket from 'ws';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { FloodgateGuard, FloodgateModule, RateLimit, type FloodgateModuleOptions } from '@floodgate/nestjs';
import { startApp } from './nest-app';

/*
 * A WebSocket gateway (@nestjs/platform-ws) limited by FloodgateGuard, over real ws connections and Redis:
 * messages count per client address, across its connections; a refused message gets an answer (an
 * 'exception' event with the denial), never silence, and its handler does not run.
 */
const redis = connect();
const closing = closeAfterEach();

type AnyDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => unknown;

/** A gateway answering `ping` with `pong` (and `search` with `found`), counting its calls in `hits`. */
function gateway(hits: Record<string, number>, handlers: Record<string, AnyDecorator[]>, classDecorators: AnyDecorator[] = []) {
  class ChatGateway {}
  const proto = ChatGateway.prototype as unknown as Record<string, unknown>;
  for (const [event, decorators] of Object.entries(handlers)) {
    // A gateway's handler gets (client, data).
    proto[event] = (_client: unknown, data: unknown) => {
      hits[event] = (hits[event] ?? 0) + 1;
      return { event: `${event}:ok`, data };
    };
    const descriptor = Object.getOwnPropertyDescriptor(proto, event)!;
    for (const d of [SubscribeMessage(event) as AnyDecorator, ...decorators].reverse()) d(proto, event, descriptor);
  }
  for (const d of [...classDecorators].reverse()) d(ChatGateway);
  WebSocketGateway()(ChatGateway);
  return ChatGateway;
}

/** An app of one gateway; its messages guarded by the gateway's own @UseGuards (Nest's APP_GUARD does not reach gateways). */
async function wsApp(options: Partial<FloodgateModuleOptions>, provider: object, guard: 'app' | 'gateway' = 'gateway') {
  const { app, url } = await startApp(
    'express',
    {
      imports: [FloodgateModule.forRoot({ redis, prefix: uniquePrefix('ws'), ...options } as FloodgateModuleOptions)],
      providers: [provider as never, ...(guard === 'app' ? [{ provide: APP_GUARD, useClass: FloodgateGuard }] : [])],
    },
    {},
    (a) => a.useWebSocketAdapter(new WsAdapter(a)),
  );
  closing(app);
  return url.replace(/^http/, 'ws');
}

/** A client: `send` sends an event and resolves with the next message the server sends back. */
async function client(url: string) {
  const ws = new WebSocket(url);
  closing({ close: () => ws.close() });
  await once(ws, 'open');
  const queue: unknown[] = [];
  const waiting: ((m: unknown) => void)[] = [];
  ws.on('message', (raw) => {
    const message = JSON.parse(String(raw)) as unknown;
    const next = waiting.shift();
    if (next) next(message);
    else queue.push(message);
  });
  return {
    send(event: string, data: unknown): Promise<{ event: string; data: Record<string, unknown> }> {
      ws.send(JSON.stringify({ event, data }));
      return new Promise((resolve) => {
        if (queue.length > 0) resolve(queue.shift() as never);
        else waiting.push(resolve as never);
      });
    },
  };
}

test('a message over the limit gets an exception event with the denial; its handler does not run', async () => {
  const hits: Record<string, number> = {};
  const url = await wsApp({ limits: { limit: 2, window: '1m' } }, gateway(hits, { ping: [] }, [UseGuards(FloodgateGuard)]));
  const c = await client(url);
  expect(await c.send('ping', 1)).toEqual({ event: 'ping:ok', data: 1 });
  expect(await c.send('ping', 2)).toEqual({ event: 'ping:ok', data: 2 });
  const denied = await c.send('ping', 3);
  expect(denied).toEqual({
    event: 'exception',
    data: {
      status: 'error',
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'TOO_MANY_REQUESTS',
      message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds$/),
      retryAfter: expect.any(Number),
      cause: { pattern: 'ping' },
    },
  });
  expect(denied.data.retryAfter).toBeGreaterThanOrEqual(55);
  // The next denial is the block cache's, answered without a store call: the same exception event.
  expect(await c.send('ping', 4)).toMatchObject({ event: 'exception', data: { statusCode: 429, code: 'TOO_MANY_REQUESTS' } });
  expect(hits).toEqual({ ping: 2 });
});

test('the limit is per client address: a new connection (or several at once) buys no new budget', async () => {
  const hits: Record<string, number> = {};
  const url = await wsApp({ limits: { limit: 3, window: '1m' } }, gateway(hits, { ping: [] }, [UseGuards(FloodgateGuard)]));
  const [a, b] = [await client(url), await client(url)];
  const answers = await Promise.all(
    [a.send('ping', 1), b.send('ping', 2), a.send('ping', 3), b.send('ping', 4)].map((p) => p.then((m) => m.event)),
  );
  expect(answers.sort()).toEqual(['exception', 'ping:ok', 'ping:ok', 'ping:ok']);
  const fresh = await client(url);
  expect((await fresh.send('ping', 5)).event).toBe('exception');
  expect(hits).toEqual({ ping: 3 });
});

test('@UseGuards on a gateway and @RateLimit on one of its messages; the functions see { headers, ip, client, data }', async () => {
  const hits: Record<string, number> = {};
  const seen: unknown[] = [];
  const url = await wsApp(
    {},
    gateway(
      hits,
      {
        ping: [],
        search: [
          RateLimit({
            name: 'search',
            limits: { limit: 1, window: '1m' },
            identify: (req, defaults) => {
              seen.push([req.ip, req.data, typeof req.headers, typeof req.client]);
              return defaults;
            },
          }),
        ],
      },
      [UseGuards(FloodgateGuard)],
    ),
  );
  const c = await client(url);
  expect((await c.send('search', 'a')).event).toBe('search:ok');
  expect((await c.send('search', 'b')).data).toMatchObject({ statusCode: 429, cause: { pattern: 'search' } });
  for (let i = 0; i < 3; i++) expect((await c.send('ping', i)).event).toBe('ping:ok');
  expect(seen).toEqual([
    ['127.0.0.1', 'a', 'object', 'object'],
    ['127.0.0.1', 'b', 'object', 'object'],
  ]);
});

const nestMajor = Number((globalThis as { FLOODGATE_NEST_MAJOR?: string }).FLOODGATE_NEST_MAJOR ?? '12');
test(`Nest ${nestMajor}'s APP_GUARD ${nestMajor >= 12 ? 'runs' : 'does not run'} for a gateway's messages (on Nest 11 only @UseGuards(FloodgateGuard) limits them)`, async () => {
  const hits: Record<string, number> = {};
  const url = await wsApp({ limits: { limit: 1, window: '1m' } }, gateway(hits, { ping: [] }), 'app');
  const c = await client(url);
  const events: string[] = [];
  for (let i = 0; i < 3; i++) events.push((await c.send('ping', i)).event);
  expect(events).toEqual(nestMajor >= 12 ? ['ping:ok', 'exception', 'exception'] : ['ping:ok', 'ping:ok', 'ping:ok']);
});
