// Run by test/pack.test.ts in a scratch app outside the repository, where the packed tarballs are installed:
// what an ESM user writes. Prints one JSON line: what each part answered.
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { ConfigError, createLimiter } from '@floodgate/core';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import fastifyRateLimit from '@floodgate/fastify';
import { rateLimit as honoRateLimit } from '@floodgate/hono';
import { serve as serveHono } from '@hono/node-server';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import { FloodgateGuard, FloodgateModule } from '@floodgate/nestjs';
import { Controller, Get, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import 'reflect-metadata';
import Router from '@koa/router';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import Koa from 'koa';

const limits = { limit: 1, window: '1m' };
const out = { format: 'esm' };

// The core, in memory and on the test Redis (under a prefix of its own, reset afterwards).
const memory = createLimiter({ name: 'memory', limits });
out.memory = [(await memory.check('ip:192.0.2.1')).allowed, (await memory.check('ip:192.0.2.1')).allowed];
await memory.close();
const redis = new Redis(process.env.FLOODGATE_TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
const onRedis = createLimiter({ redis, prefix: process.argv[2], name: 'esm', limits, failure: 'closed', timeoutMs: 5000 });
const first = await onRedis.check('ip:192.0.2.1');
const second = await onRedis.check('ip:192.0.2.1');
out.redis = [
  [first.allowed, first.source],
  [second.allowed, second.source],
];
await onRedis.reset('ip:192.0.2.1');
await onRedis.close();
await redis.quit();

/** Two GETs: the limit is 1, so 200 then 429. */
async function twice(url) {
  const statuses = [];
  for (let i = 0; i < 2; i++) {
    const res = await fetch(url);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}
async function serve(server) {
  await once(server, 'listening');
  const statuses = await twice(`http://127.0.0.1:${server.address().port}/`);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return statuses;
}

const e = express();
e.use(expressRateLimit({ name: 'express', limits }));
e.get('/', (req, res) => void res.json({ remaining: req.rateLimit?.remaining }));
out.express = await serve(e.listen(0, '127.0.0.1'));

const f = Fastify();
await f.register(fastifyRateLimit, { name: 'fastify', limits });
f.get('/', async (request) => ({ remaining: request.rateLimit?.remaining }));
out.fastify = await twice(await f.listen({ port: 0, host: '127.0.0.1' }));
await f.close();

const h = new Hono();
h.use(honoRateLimit({ name: 'hono', limits }));
h.get('/', (c) => c.json({ remaining: c.get('rateLimit')?.remaining }));
out.hono = await serve(serveHono({ fetch: h.fetch, hostname: '127.0.0.1', port: 0 }));

const k = new Koa();
const router = new Router();
router.get('/', koaRateLimit({ name: 'koa', limits }), (ctx) => {
  ctx.body = { remaining: ctx.state.rateLimit?.remaining };
});
k.use(router.routes());
out.koa = await serve(k.listen(0, '127.0.0.1'));

// Nest's decorators, applied as functions (this file is plain JavaScript).
class NestController {
  get() {
    return { ok: true };
  }
}
Get('/')(NestController.prototype, 'get', Object.getOwnPropertyDescriptor(NestController.prototype, 'get'));
Controller()(NestController);
class NestApp {}
Module({
  imports: [FloodgateModule.forRoot({ name: 'nestjs', limits })],
  controllers: [NestController],
  providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
})(NestApp);
const n = await NestFactory.create(NestApp, { logger: false });
await n.listen(0, '127.0.0.1');
out.nestjs = await twice(`http://127.0.0.1:${n.getHttpServer().address().port}/`);
await n.close();

// One copy of the core: the adapters throw the ConfigError class this file imported, and resolve the
// core to the same file as this app does.
const configError = (make) => {
  try {
    make();
    return 'no error';
  } catch (err) {
    return err instanceof ConfigError;
  }
};
out.sameConfigError = [
  configError(() => expressRateLimit({ limits: 'nonsense' })),
  configError(() => koaRateLimit({ limits: 'nonsense' })),
  configError(() => honoRateLimit({ limits: 'nonsense' })),
];
const require = createRequire(import.meta.url);
out.core = require.resolve('@floodgate/core');
out.coreOfAdapters = ['express', 'fastify', 'hono', 'koa', 'nestjs'].map((a) =>
  createRequire(require.resolve(`@floodgate/${a}`)).resolve('@floodgate/core'),
);
console.log(JSON.stringify(out));
