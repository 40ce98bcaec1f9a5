// Type-checked (not run) by test/pack.test.ts in the scratch app, with "module": "nodenext": an ESM
// TypeScript user's view of the installed packages' declarations (dist/index.d.mts).
import { createLimiter, ConfigError, type Decision, type LimiterOptions } from '@floodgate/core';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import fastifyRateLimit, { RateLimitError } from '@floodgate/fastify';
import { rateLimit as honoRateLimit } from '@floodgate/hono';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import Router from '@koa/router';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import Koa from 'koa';

const options: LimiterOptions = {
  limits: [
    { limit: 10, window: '1s' },
    { limit: 100, window: '1h', for: 'user' },
  ],
};
const memory = createLimiter(options);
const onRedis = createLimiter({
  ...options,
  redis: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'),
  name: 'typed',
  failure: 'local',
});
const decision: Decision = await memory.check(['ip:192.0.2.1', 'user:42'], { cost: 2 });
const wait: number = decision.retryAfterMs;
await onRedis.peek('ip:192.0.2.1');
export const error: ConfigError | undefined = undefined;

const app = express();
app.use(
  expressRateLimit({
    limiter: onRedis,
    identify: (req, defaults) => (req.get('x-tenant') ? [...defaults, `tenant:${req.get('x-tenant')}`] : defaults),
  }),
);
app.get('/', (req, res) => {
  const remaining: number | undefined = req.rateLimit?.remaining;
  res.json({ remaining, wait });
});

const f = Fastify();
await f.register(fastifyRateLimit, { name: 'api', limits: { limit: 5, window: '10s' } });
f.get('/search', { config: { rateLimit: { name: 'search', limits: { limit: 1, window: '1s' } } } }, async (request) => ({
  remaining: request.rateLimit?.remaining,
}));
f.setErrorHandler((err, _request, reply) => {
  if (err instanceof RateLimitError) return reply.code(err.statusCode).send(err.body);
  return reply.send(err);
});

const h = new Hono();
h.use(
  honoRateLimit({
    limiter: onRedis,
    trustProxy: ['10.0.0.0/8'],
    identify: (c, defaults) => [...defaults, `key:${c.req.header('x-api-key')}`],
  }),
);
h.get('/', (c) => {
  const d: Decision | undefined = c.get('rateLimit');
  return c.json({ remaining: d?.remaining });
});

const k = new Koa();
const router = new Router();
router.get('/', koaRateLimit({ name: 'koa', limits: { limit: 5, window: '10s' } }), (ctx) => {
  const d: Decision | undefined = ctx.state.rateLimit;
  ctx.body = { remaining: d?.remaining };
});
k.use(router.routes());

// The declarations are really there (not `any`): each of these must be an error.
// @ts-expect-error limits is required
createLimiter({});
// @ts-expect-error no such algorithm
createLimiter({ limits: { limit: 1, window: '1s' }, algorithm: 'leaky' });
app.get('/typo', (req) => {
  // @ts-expect-error a Decision has no `remainder`
  return req.rateLimit?.remainder;
});
router.get('/typo', (ctx) => {
  // @ts-expect-error ctx.state.rateLimit is a Decision
  ctx.body = ctx.state.rateLimit?.remainder;
});
h.get('/typo', (c) => {
  // @ts-expect-error c.get('rateLimit') is a Decision
  return c.json({ remaining: c.get('rateLimit')?.remainder });
});
// @ts-expect-error trustProxy takes addresses and ranges, not a hop count
honoRateLimit({ limiter: onRedis, trustProxy: 1 });
