import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import Fastify from 'fastify';
import { createClient } from 'redis';
import { GlideClient, GlideClusterClient, ProtocolVersion } from '@valkey/valkey-glide';
import { createLimiter } from '@floodgate/core';
import { rateLimit as expressRateLimit, slowDown as expressSlowDown } from '@floodgate/express';
import fastifyRateLimit, { slowDown as fastifySlowDown } from '@floodgate/fastify';
import { rateLimit as koaRateLimit, slowDown as koaSlowDown } from '@floodgate/koa';
import { concurrency as honoConcurrency, rateLimit as honoRateLimit, slowDown as honoSlowDown } from '@floodgate/hono';

/*
 * The adapters' option types require `limits` unless a shared `limiter` is given (and then no core option
 * beside it), so the mistakes below fail to compile instead of throwing a ConfigError at run time. Jest's
 * transform (swc) only transpiles, so the first test compiles this file with tsc, as `npm run typecheck`
 * does: a `@ts-expect-error` that meets no error is itself an error, so each line below can fail.
 */
const limits = { limit: 5, window: '1m' };

/** Never called: it only has to compile. */
export async function typeChecks(): Promise<void> {
  const limiter = createLimiter({ limits });
  expressRateLimit({ limits });
  expressRateLimit({ limiter, logger: { warn: () => undefined } });
  // @ts-expect-error neither limits nor limiter
  expressRateLimit({ name: 'x' });
  // @ts-expect-error neither limits nor limiter
  expressRateLimit({});
  // @ts-expect-error core options beside a shared limiter belong on the limiter
  expressRateLimit({ limiter, redis: undefined, limits });
  // @ts-expect-error core options beside a shared limiter belong on the limiter
  expressRateLimit({ limiter, name: 'x' });

  koaRateLimit({ limits, name: 'x' });
  koaRateLimit({ limiter });
  // @ts-expect-error neither limits nor limiter
  koaRateLimit({ name: 'x' });
  // @ts-expect-error core options beside a shared limiter belong on the limiter
  koaRateLimit({ limiter, algorithm: 'fixed-window' });

  honoRateLimit({ limits, trustProxy: ['loopback', '10.0.0.0/8'] });
  honoRateLimit({ limiter, handler: (c) => c.text('slow down', 429) });
  // @ts-expect-error neither limits nor limiter
  honoRateLimit({ trustProxy: 'loopback' });
  // @ts-expect-error core options beside a shared limiter belong on the limiter
  honoRateLimit({ limiter, failure: 'closed' });
  // @ts-expect-error trustProxy takes addresses and ranges, not a hop count
  honoRateLimit({ limits, trustProxy: 1 });
  honoConcurrency({ max: 2, getConnInfo: (c) => ({ remote: { address: c.req.header('x-real-ip') } }) });

  const app = Fastify();
  await app.register(fastifyRateLimit, { limits });
  await app.register(fastifyRateLimit, { limiter });
  await app.register(fastifyRateLimit, { global: false, prefix: 'p' });
  // @ts-expect-error the global limiter needs limits (or global: false)
  await app.register(fastifyRateLimit, { name: 'x' });
  app.get('/a', { config: { rateLimit: { name: 'a', limits } } }, async () => 'a');
  app.get('/b', { config: { rateLimit: false } }, async () => 'b');
  // @ts-expect-error a route's limiter needs its own limits (or a shared limiter)
  app.get('/c', { config: { rateLimit: { name: 'c' } } }, async () => 'c');

  // slowDown: the same rule, and delayMs as a number or a function of the count and the framework's request.
  expressSlowDown({ limits, delayAfter: 2, delayMs: (used, req) => (req.ip === '127.0.0.1' ? 0 : used * 100) });
  expressSlowDown({ limiter, delayMs: 500, maxDelayMs: 5_000 });
  // @ts-expect-error neither limits nor limiter
  expressSlowDown({ delayAfter: 1 });
  // @ts-expect-error core options beside a shared limiter belong on the limiter
  expressSlowDown({ limiter, deny: ['10.0.0.0/8'] });
  koaSlowDown({ limits, delayMs: (used, ctx) => (ctx.path === '/' ? used : 0) });
  honoSlowDown({ limits, delayMs: (used, c) => (c.req.path === '/' ? used : 0) });
  // @ts-expect-error delayMs is ms or a function, not a duration string
  honoSlowDown({ limits, delayMs: '1s' });
  // @ts-expect-error delayMs is ms or a function, not a duration string
  koaSlowDown({ limits, delayMs: '1s' });
  await app.register(fastifySlowDown, { limits, allow: ['10.0.0.0/8'], delayMs: (used, request) => (request.url === '/' ? used : 0) });
  // @ts-expect-error neither limits nor limiter
  await app.register(fastifySlowDown, { delayAfter: 1 });
  // cost per unit and settle, with each framework's arguments (docs/budgets.md, "In an HTTP app").
  const tokens = [limits, { limit: 10_000, window: '1m', unit: 'tokens' }];
  expressRateLimit({ limits: tokens, cost: { requests: 1, tokens: 500 } });
  expressRateLimit({
    limits: tokens,
    cost: (req) => ({ requests: 1, tokens: Number(req.get('x-max') ?? 500) }),
    settle: (_req, res) => ({ requests: 1, tokens: res.statusCode }),
  });
  koaRateLimit({ limits: tokens, settle: async (ctx) => ({ requests: 1, tokens: ctx.status }) });
  honoRateLimit({ limits: tokens, settle: (c) => ({ requests: 1, tokens: c.res.status }) });
  await app.register(fastifyRateLimit, { limits: tokens, settle: (_request, reply) => ({ requests: 1, tokens: reply.statusCode }) });
  // @ts-expect-error a cost per unit is numbers
  expressRateLimit({ limits: tokens, cost: { requests: '1' } });
  // @ts-expect-error settle answers a cost, not a boolean
  expressRateLimit({ limits: tokens, settle: () => true });
  // @ts-expect-error slowDown never reserves: no settle
  expressSlowDown({ limits, settle: () => 1 });
  limiter.setLists({ allow: ['user:admin'], deny: ['203.0.113.0/24'] });
  // @ts-expect-error setLists takes { allow?, deny? }
  limiter.setLists({ allowed: [] });

  // headers: one mode, or a draft and 'legacy' together (docs/express.md).
  expressRateLimit({ limits, headers: ['draft-8', 'legacy'] });
  koaRateLimit({ limits, headers: 'legacy' });
  // @ts-expect-error false is not a dialect to list
  expressRateLimit({ limits, headers: ['draft-8', false] });

  // The clients of docs/clients.md as their libraries type them, without a cast: node-redis (RESP3, and
  // RESP2 for Redis 4 and 5) and Valkey GLIDE, whose settings are private members of its classes.
  createLimiter({ redis: createClient(), limits });
  createLimiter({ redis: createClient({ RESP: 2 }), limits });
  createLimiter({ redis: await GlideClient.createClient({ addresses: [], protocol: ProtocolVersion.RESP2 }), limits });
  createLimiter({ redis: await GlideClusterClient.createClient({ addresses: [] }), limits });
}

test('this file type-checks: every @ts-expect-error below meets its error', () => {
  const tsc = join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');
  const run = (): string =>
    execFileSync(process.execPath, [tsc, '-p', join(__dirname, 'tsconfig.option-types.json')], { encoding: 'utf8' });
  expect(run).not.toThrow();
}, 60_000);

test('what the types refuse is refused at run time too, with a ConfigError', async () => {
  const missing = { name: 'x' } as never;
  expect(() => expressRateLimit(missing)).toThrow(expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'limits' }));
  expect(() => koaRateLimit(missing)).toThrow(expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'limits' }));
  expect(() => honoRateLimit(missing)).toThrow(expect.objectContaining({ code: 'ERR_FLOODGATE_CONFIG', option: 'limits' }));
  const limiter = createLimiter({ limits });
  expect(() => expressRateLimit({ limiter, name: 'x' } as never)).toThrow(expect.objectContaining({ option: 'name' }));
  await expect(Fastify().register(fastifyRateLimit, missing).ready()).rejects.toMatchObject({ option: 'limits' });
  await limiter.close();
});
