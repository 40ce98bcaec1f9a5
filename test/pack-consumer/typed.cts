// Type-checked (not run) by test/pack.test.ts in the scratch app, with "module": "nodenext": a CommonJS
// TypeScript user's view of the installed packages' declarations (dist/index.d.ts).
import { createLimiter, type Decision } from '@floodgate/core';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import fastifyRateLimit = require('@floodgate/fastify');
import { rateLimit as honoRateLimit } from '@floodgate/hono';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import express = require('express');
import Fastify = require('fastify');
import Koa = require('koa');
import { Hono } from 'hono';

export async function main(): Promise<Decision> {
  const limiter = createLimiter({ limits: { limit: 1, window: '1m' } });
  express().use(expressRateLimit({ limiter }));
  await Fastify.fastify().register(fastifyRateLimit.default, { limiter });
  new Koa().use(koaRateLimit({ limiter }));
  new Hono().use(honoRateLimit({ limiter }));
  return limiter.check('ip:192.0.2.1');
}
