import 'reflect-metadata';
import { Controller, Get, Module, type INestApplication, type ModuleMetadata, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import request from 'supertest';
import type { Platform } from './app-factory';

/*
 * Small Nest apps for the package's own tests, written without decorator syntax (the repository's tsconfig
 * has no experimentalDecorators): a decorator is a function, applied here as Nest would apply it.
 */

type AnyDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => unknown;

/** A controller at `path` whose handlers answer `{ route: <name> }` and count themselves in `hits`. */
export function controller(
  path: string,
  routes: Record<string, AnyDecorator[]>,
  classDecorators: AnyDecorator[] = [],
  hits: Record<string, number> = {},
): Type {
  const cls = class {};
  Object.defineProperty(cls, 'name', { value: `${path.replace(/\W/g, '') || 'Root'}Controller` });
  const proto = cls.prototype as Record<string, unknown>;
  for (const [name, decorators] of Object.entries(routes)) {
    proto[name] = function () {
      hits[name] = (hits[name] ?? 0) + 1;
      return { route: name };
    };
    // Named as a method written in a class is (@nestjs/throttler's keys include the handler's name).
    Object.defineProperty(proto[name], 'name', { value: name });
    const descriptor = Object.getOwnPropertyDescriptor(proto, name)!;
    for (const d of [Get(name) as AnyDecorator, ...decorators].reverse()) d(proto, name, descriptor);
  }
  for (const d of [...classDecorators].reverse()) d(cls);
  Controller(path)(cls);
  return cls;
}

/** Starts an app of `metadata` on a platform, listening on a loopback port; closed by the caller. `fastify`: the FastifyAdapter's options. */
export async function startApp(
  platform: Platform,
  metadata: ModuleMetadata,
  fastify: ConstructorParameters<typeof FastifyAdapter>[0] = {},
  prepare: (app: INestApplication) => void = () => undefined,
): Promise<{ app: INestApplication; url: string }> {
  class AppModule {}
  Module(metadata)(AppModule);
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(fastify);
  const app = await NestFactory.create(AppModule, adapter, { logger: false, abortOnError: false });
  try {
    prepare(app);
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

/** The statuses of `n` GETs of `path`, one after the other, with the headers of `set`. */
export async function statuses(url: string, path: string, n: number, set: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(url).get(path).set(set)).status);
  return out;
}
