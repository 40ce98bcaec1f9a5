import { UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { WsAdapter } from '@nestjs/platform-ws';
import { closeAfterEach, connect, uniquePrefix } from '@floodgate/testing';
import { Concurrency, FloodgateGuard, FloodgateModule, RateLimit, SlowDown, type FloodgateModuleOptions } from '@floodgate/nestjs';
import { controller, startApp } from './nest-app';

/*
 * A limit declared where no FloodgateGuard runs would be silently unenforced: the application's start
 * reports every such place, once, to the module's logger.
 */
const redis = connect();
const closing = closeAfterEach();
const limit = (name: string) => RateLimit({ name, limits: { limit: 1, window: '1m' } });
const appGuard = { provide: APP_GUARD, useClass: FloodgateGuard };

/** A gateway with a limited `ping` message, guarded or not. */
function chatGateway(guards: (typeof UseGuards)[] = []) {
  class ChatGateway {
    ping(): string {
      return 'pong';
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(ChatGateway.prototype, 'ping')!;
  limit('ping')(ChatGateway.prototype, 'ping', descriptor);
  SubscribeMessage('ping')(ChatGateway.prototype, 'ping', descriptor);
  for (const g of guards) g(FloodgateGuard)(ChatGateway);
  WebSocketGateway()(ChatGateway);
  return ChatGateway;
}

async function warningsOf(providers: object[], controllers: ReturnType<typeof controller>[], extra: Partial<FloodgateModuleOptions> = {}) {
  const warnings: string[] = [];
  const options = { redis, prefix: uniquePrefix('unguarded'), logger: { warn: (m: string) => void warnings.push(m) }, ...extra };
  const { app } = await startApp(
    'express',
    { imports: [FloodgateModule.forRoot(options)], controllers, providers: providers as never[] },
    {},
    (a) => a.useWebSocketAdapter(new WsAdapter(a)),
  );
  closing(app);
  return warnings;
}

test('without a guard, every limited class and handler is named in one warning', async () => {
  const warnings = await warningsOf(
    [],
    [
      controller('/search', {
        find: [limit('find'), SlowDown({ name: 'slow', limits: { limit: 5, window: '1m' }, delayAfter: 1, delayMs: 10 })],
      }),
      controller('/upload', { put: [] }, [Concurrency({ max: 1 })]),
      controller('/free', { x: [] }),
    ],
  );
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(
    /^floodgate: limits declared where no FloodgateGuard runs, so nothing enforces them: searchController\.find, uploadController\. /,
  );
});

const nestMajor = Number((globalThis as { FLOODGATE_NEST_MAJOR?: string }).FLOODGATE_NEST_MAJOR ?? '12');
test(`APP_GUARD guards controllers${nestMajor >= 12 ? ' and' : ' but not'} gateways on Nest ${nestMajor}; @UseGuards(FloodgateGuard) on a class or a handler guards it`, async () => {
  const guardedRoutes = [
    controller('/a', { find: [limit('a')] }),
    controller('/b', { find: [limit('b'), UseGuards(FloodgateGuard)] }),
    controller('/c', { find: [] }, [limit('c'), UseGuards(FloodgateGuard)]),
  ];
  const withAppGuard = await warningsOf([appGuard, chatGateway()], guardedRoutes);
  expect(withAppGuard).toEqual(nestMajor >= 12 ? [] : [expect.stringContaining('nothing enforces them: ChatGateway.ping. ')]);
  expect(await warningsOf([chatGateway([UseGuards])], guardedRoutes.slice(1))).toEqual([]);
  expect(await warningsOf([appGuard, chatGateway([UseGuards])], guardedRoutes)).toEqual([]);
});

test('warnings: false silences it', async () => {
  expect(await warningsOf([], [controller('/a', { find: [limit('a')] })], { warnings: false })).toEqual([]);
});
