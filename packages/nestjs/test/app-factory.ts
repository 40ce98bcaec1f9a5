import 'reflect-metadata';
import { Controller, Get, Post, Req, Res, StreamableFile, type INestApplication, type Type } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Module } from '@nestjs/common';
import { answerOf, beforeAnswer, sseReadable, type AdapterFactory, type AppSpec, type RoutePath } from '@floodgate/testing';
import { FloodgateGuard, FloodgateModule, RateLimit, SlowDown, type FloodgateModuleOptions } from '@floodgate/nestjs';

export type Platform = 'express' | 'fastify';

/** Sets a response's status on either platform (Express's res, Fastify's reply). */
export function statusOn(res: unknown, status: number): void {
  const reply = res as { code?: (s: number) => unknown; status: (s: number) => unknown };
  if (typeof reply.code === 'function') reply.code(status);
  else reply.status(status);
}

/** A controller class built from a spec: routes, with a handler method per route, decorators applied as calls. */
function suiteController(spec: AppSpec, count: () => void): Type {
  class SuiteController {
    async slow(): Promise<object> {
      count();
      await spec.slow?.();
      return { ok: true };
    }
    stream(req: { headers: Record<string, string> }): StreamableFile {
      count();
      return new StreamableFile(sseReadable(req.headers, spec.stream), { type: 'text/event-stream' });
    }
  }
  const proto = SuiteController.prototype as unknown as Record<string, unknown>;
  const route = (key: string, method: typeof Get, path: string, own?: object): void => {
    const descriptor = Object.getOwnPropertyDescriptor(proto, key)!;
    method(path)(proto, key, descriptor);
    if (own) RateLimit(own as never)(proto, key, descriptor);
  };
  route('slow', Get, '/slow');
  Req()(proto, 'stream', 0);
  route('stream', Get, '/stream');
  const routes: [RoutePath, typeof Get][] = [
    ['/', Get],
    ['/search', Get],
    ['/login', Post],
  ];
  routes.forEach(([path, method], i) => {
    const key = `route${i}`;
    proto[key] = async function (req: { headers: Record<string, string> }, res: unknown): Promise<object> {
      count();
      const { status } = answerOf(req.headers);
      statusOn(res, status);
      await beforeAnswer(req.headers, spec);
      return { ok: status < 400 };
    };
    Req()(proto, key, 0);
    Res({ passthrough: true })(proto, key, 1);
    route(key, method, path, spec.routes?.[path]);
  });
  // rateLimitFirst: the module's rate limit runs before the class's slow-down (module, then class, then handler).
  if (spec.rateLimitFirst && spec.slowDown) SlowDown(spec.slowDown as never)(SuiteController);
  Controller()(SuiteController);
  return SuiteController;
}

/** The module's options for a spec: `global` as the module's rate limit, concurrency and slow-down module-wide. */
function moduleOptions(spec: AppSpec): FloodgateModuleOptions {
  const options: Record<string, unknown> = { ...(spec.global ?? {}) };
  if (spec.concurrency) options.concurrency = spec.concurrency;
  if (spec.slowDown && !spec.rateLimitFirst) options.slowDown = spec.slowDown;
  // A polluted Object.prototype must not reach the options through the spread's own copy: it copies own keys only.
  return options as FloodgateModuleOptions;
}

/** Builds the suite's app on a Nest platform, with FloodgateGuard as APP_GUARD. */
export async function makeNestApp(platform: Platform, spec: AppSpec, extra: { controllers?: Type[]; imports?: never[] } = {}) {
  let hits = 0;
  const controller = suiteController(spec, () => void hits++);
  class AppModule {}
  Module({
    imports: [FloodgateModule.forRoot(moduleOptions(spec)), ...(extra.imports ?? [])],
    controllers: [controller, ...(extra.controllers ?? [])],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  })(AppModule);
  const user = (headers: Record<string, unknown>): { id: string } | undefined =>
    typeof headers['x-user'] === 'string' ? { id: headers['x-user'] } : undefined;
  let app: INestApplication;
  if (platform === 'express') {
    const express = await NestFactory.create<NestExpressApplication>(AppModule, new ExpressAdapter(), {
      logger: false,
      abortOnError: false,
    });
    if (spec.trustProxy) express.set('trust proxy', 'loopback');
    // The auth stand-in: middleware, so it runs before the guards.
    express.use((req: { headers: Record<string, unknown>; user?: unknown }, _res: unknown, next: () => void) => {
      req.user = user(req.headers);
      next();
    });
    app = express;
  } else {
    const adapter = new FastifyAdapter({ trustProxy: spec.trustProxy ? '127.0.0.1' : false });
    adapter.getInstance().addHook('onRequest', async (request: { headers: Record<string, unknown>; user?: unknown }) => {
      request.user = user(request.headers);
    });
    app = await NestFactory.create<NestFastifyApplication>(AppModule, adapter, { logger: false, abortOnError: false });
  }
  try {
    await app.init();
    if (spec.socketPath) {
      if (platform === 'express') await app.listen(spec.socketPath);
      else await (app as NestFastifyApplication).getHttpAdapter().getInstance().listen({ path: spec.socketPath });
      return { url: 'http://localhost', socketPath: spec.socketPath, hits: () => hits, close: () => app.close(), app };
    }
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    return { url, hits: () => hits, close: () => app.close(), app };
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
}

export const nestExpressFactory: AdapterFactory = { name: 'nest-express', makeApp: (spec) => makeNestApp('express', spec) };
export const nestFastifyFactory: AdapterFactory = { name: 'nest-fastify', makeApp: (spec) => makeNestApp('fastify', spec) };
