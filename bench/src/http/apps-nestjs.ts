import 'reflect-metadata';
import { Controller, Get, HttpException, Module, type ExecutionContext, type ModuleMetadata } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import * as floodgateNestjs from '@floodgate/nestjs';
import { HAND_429, adapter, floodgateOptions, type AppFactory, type Listen } from './apps';
import { clientOf } from './shapes';

/*
 * NestJS 11 on @nestjs/platform-express and @nestjs/platform-fastify: no limiter; Floodgate (@floodgate/nestjs,
 * FloodgateGuard as APP_GUARD); @nestjs/throttler with @nest-lab/throttler-storage-redis (the ioredis storage
 * throttler's README lists), one named throttler per rule, each with its own tracker.
 * Written without decorator syntax (bench's tsconfig has no experimentalDecorators): decorators are called.
 */

type Platform = 'express' | 'fastify';

class RootController {
  ok(): string {
    return 'ok';
  }
}
Get()(RootController.prototype, 'ok', Object.getOwnPropertyDescriptor(RootController.prototype, 'ok')!);
Controller()(RootController);

async function app(platform: Platform, metadata: ModuleMetadata = {}): Promise<Listen> {
  class AppModule {}
  Module({ ...metadata, controllers: [RootController] })(AppModule);
  const nest = await NestFactory.create(AppModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false });
  return async (port) => {
    await nest.listen(port, '127.0.0.1');
  };
}

const floodgate =
  (platform: Platform): AppFactory =>
  (shape, redis, variant) => {
    const { FloodgateModule, FloodgateGuard } = adapter(variant, '@floodgate/nestjs', floodgateNestjs);
    return app(platform, {
      imports: [FloodgateModule.forRoot(floodgateOptions<floodgateNestjs.FloodgateRequest>(shape, redis, variant, (req) => req.headers))],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    });
  };

// Made once: a guard's thrown 429 with no per-request work of ours, what Nest's own denial path costs.
const DENIAL = new HttpException(HAND_429.body, 429);

function nestjsApps(platform: Platform): Record<string, AppFactory> {
  return {
    baseline: () => app(platform),
    floodgate: floodgate(platform),
    'floodgate+autopipeline': floodgate(platform),
    '@nestjs/throttler': (shape, redis) =>
      app(platform, {
        imports: [
          ThrottlerModule.forRoot({
            throttlers: shape.peers.map((r, i) => ({
              name: `t${i}`,
              ttl: r.windowMs,
              limit: r.limit,
              getTracker: (req) => r.id(clientOf((req as { headers: Record<string, string | string[] | undefined> }).headers)),
            })),
            storage: new ThrottlerStorageRedisService(redis),
          }),
        ],
        providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
      }),
    '429': () =>
      app(platform, {
        providers: [
          {
            provide: APP_GUARD,
            useValue: {
              canActivate(context: ExecutionContext): never {
                // Express's res and Fastify's reply both have header(name, value).
                const res = context.switchToHttp().getResponse<{ header(name: string, value: string): unknown }>();
                for (const [name, value] of Object.entries(HAND_429.headers)) res.header(name, value);
                throw DENIAL;
              },
            },
          },
        ],
      }),
  };
}

export const nestjsExpressApps = nestjsApps('express');
export const nestjsFastifyApps = nestjsApps('fastify');
