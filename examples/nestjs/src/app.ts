import 'reflect-metadata';
import { Body, Controller, Get, HttpException, Module, Post, Query, Req } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Redis } from 'ioredis';
import { FloodgateGuard, FloodgateModule, RateLimit, type Decision } from '@floodgate/nestjs';

export interface AppOptions {
  /** Omitted: Floodgate's in-memory store (one process only). */
  redis?: Redis;
  /** Key namespace, so several copies of the example can share one Redis. */
  prefix?: string;
  /** Behind a reverse proxy: how many hops of X-Forwarded-For to trust (req.ip then follows them). */
  trustProxy?: number;
}

@Controller()
class ApiController {
  // The module's limit only.
  @Get()
  home(@Req() req: { rateLimit?: Decision }) {
    return { hello: 'world', remaining: req.rateLimit?.remaining };
  }

  // Adds to the module's limit: both count here.
  @Get('search')
  @RateLimit({ name: 'search', limits: { limit: 3, window: '10s' } })
  search(@Query('q') q?: string) {
    return { query: typeof q === 'string' ? q : '', results: [] };
  }

  // Per account (the body's username; the body is parsed before guards run), whatever the client's IP;
  // requests without one share the client's IP budget.
  @Post('login')
  @RateLimit({
    name: 'login',
    limits: { limit: 5, window: '15m' },
    message: 'Too many login attempts for this account; try again later',
    identify: (req, defaults) => {
      const username: unknown = (req.body as { username?: unknown } | undefined)?.username;
      return typeof username === 'string' && username !== '' ? `account:${username.toLowerCase()}` : defaults;
    },
  })
  login(@Body() _body: unknown) {
    throw new HttpException({ error: 'invalid credentials (this is a demo)' }, 401);
  }
}

/**
 * The example API: every route is under the module's limit (20 per 10 s and 500 per hour per client);
 * /search adds its own stricter one; /login adds one per account, so guessing one user's password from
 * many IPs is limited too.
 */
export async function createApp({ redis, prefix = 'floodgate-example', trustProxy }: AppOptions = {}): Promise<NestExpressApplication> {
  @Module({
    imports: [
      FloodgateModule.forRoot({
        redis,
        prefix,
        name: 'api',
        // Plans: the first applies to every client; `npx floodgate override set key:team-7 --plan pro` moves one
        // identifier to another, on the running app (overrides: true reads them; docs/overrides.md).
        limits: {
          free: [
            { limit: 20, window: '10s' },
            { limit: 500, window: '1h' },
          ],
          pro: [
            { limit: 200, window: '10s' },
            { limit: 5000, window: '1h' },
          ],
        },
        overrides: true,
      }),
    ],
    controllers: [ApiController],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  })
  class AppModule {}

  const app = await NestFactory.create<NestExpressApplication>(AppModule, { logger: ['error', 'warn'] });
  if (trustProxy !== undefined) app.set('trust proxy', trustProxy);
  return app;
}
