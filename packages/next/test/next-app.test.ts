import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { createLimiter, errorBody } from '@floodgate/core/adapter';
import { connect, eventually, freePort, testRedisUrl, uniquePrefix, TEST_DEADLINE } from '@floodgate/testing';
import { builtApp } from './build-app';

/*
 * @floodgate/next in a real Next.js app (test/app): built once with `next build` (build-app.ts), then served by
 * `next start` twice, each a real server on a real socket: one with no trustProxy (a client straight on
 * the socket), one behind a "proxy" on loopback (trustProxy: 'loopback'), where each test picks its client
 * with X-Forwarded-For. Second tier (jest.config.ts): the build takes minutes.
 */
const ROOT = join(__dirname, '..', '..', '..');
const redis = connect();
const prefixes = { direct: uniquePrefix('nxd'), proxied: uniquePrefix('nxp') };
let dir = '';
const servers: ChildProcess[] = [];

async function start(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const child = spawn(join(ROOT, 'node_modules', '.bin', 'next'), ['start', '-p', String(port), '-H', '127.0.0.1'], {
    cwd: dir,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      NODE_OPTIONS: '--require @floodgate/next/register',
      FG_REDIS_URL: testRedisUrl(),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  servers.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`next start exited (${code}):\n${output}`)));
    const ready = (): void => (output.includes('Ready') ? resolve() : undefined);
    child.stdout!.on('data', ready);
  });
  return `http://127.0.0.1:${port}`;
}

let direct = '';
let proxied = '';
beforeAll(async () => {
  dir = await builtApp(join(__dirname, 'app'));
  [direct, proxied] = await Promise.all([
    start({ FG_PREFIX: prefixes.direct }),
    start({ FG_PREFIX: prefixes.proxied, FG_TRUST_PROXY: 'loopback' }),
  ]);
}, 600_000);

afterAll(async () => {
  await Promise.all(
    servers.map((server) => new Promise((resolve) => (server.exitCode === null ? server.once('exit', resolve).kill() : resolve(null)))),
  );
  await redis.quit();
});

const as = (client: string) => (req: request.Test) => req.set('X-Forwarded-For', client);

test('the proxy answers the fifth request 429 with the headers and body of every adapter; the four before go on with their headers', async () => {
  const client = as('203.0.113.1');
  for (let i = 0; i < 4; i++) {
    const ok = await client(request(proxied).get('/api/hello'));
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ hello: true });
    expect(ok.headers['ratelimit-policy']).toBeDefined();
    expect(ok.headers['ratelimit']).toContain(`r=${3 - i}`);
  }
  const denied = await client(request(proxied).get('/api/hello'));
  expect(denied.status).toBe(429);
  expect(denied.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0);
  expect(denied.body).toEqual(errorBody(429, `Rate limit exceeded, retry in ${denied.headers['retry-after']} seconds`));
  // Another client has its own budget.
  expect((await as('203.0.113.2')(request(proxied).get('/api/hello'))).status).toBe(200);
});

test('no trustProxy: a new X-Forwarded-For on every request buys no new budget', async () => {
  const statuses = [];
  // The server's very first requests: the peer is stamped from Node's start (@floodgate/next/register).
  for (let i = 0; i < 6; i++) statuses.push((await as(`198.51.100.${i}`)(request(direct).get('/api/hello'))).status);
  expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  expect((await request(direct).get('/api/hello')).status).toBe(429);
});

test('behind a trusted proxy, a forged leftmost entry is never the client', async () => {
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await as(`6.6.6.${i}, 203.0.113.3`)(request(proxied).get('/api/hello'))).status);
  expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
});

test('a chain: the stricter limit on one path, the general one on every /api path', async () => {
  const client = as('203.0.113.4');
  expect((await client(request(proxied).post('/api/hello/login'))).status).toBe(200);
  expect((await client(request(proxied).post('/api/hello/login'))).status).toBe(429);
  // The login limit is its own; the general one still has room.
  expect((await client(request(proxied).get('/api/hello'))).status).toBe(200);
});

test("a route's limit adds to the proxy's: the route denies its third request while the proxy's budget has room", async () => {
  const client = as('203.0.113.5');
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await client(request(proxied).get('/api/limited'))).status);
  expect(statuses).toEqual([200, 200, 429]);
  // Each of the three counted in the proxy too: one left there.
  expect((await client(request(proxied).get('/api/hello'))).status).toBe(200);
  expect((await client(request(proxied).get('/api/hello'))).status).toBe(429);
});

test('the action limit returns a typed denial on the third call, read from the caller (next/headers)', async () => {
  const client = as('203.0.113.6');
  const bodies = [];
  for (let i = 0; i < 3; i++) bodies.push((await client(request(proxied).post('/api/action'))).body);
  expect(bodies.slice(0, 2)).toEqual([{ ok: true }, { ok: true }]);
  expect(bodies[2]).toEqual({
    rateLimited: true,
    message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds?$/),
    retryAfterMs: expect.any(Number),
    reason: 'limit',
  });
});

test('a streamed response settles at its real cost once its body has been sent to the end', async () => {
  const limiter = createLimiter({ ...TEST_DEADLINE, redis, prefix: `${prefixes.proxied}.b`, limits: { limit: 10, window: '1m' } });
  try {
    const client = as('203.0.113.7');
    const res = await client(request(proxied).get('/api/stream?chunks=2'));
    expect(res.status).toBe(200);
    expect(res.text).toBe('chunk 0\nchunk 1\n');
    // Reserved at 4, settled at the 2 chunks sent.
    const remaining = async (): Promise<number> => (await limiter.peek('ip:203.0.113.7')).remaining;
    expect(await eventually(remaining, 8, 10_000)).toBe(8);
  } finally {
    await limiter.close();
  }
});

test('a real server action (app/form/actions.js) returns the typed denial on its third call, as the form receives it', async () => {
  // The action's id, as the built page's form would post it.
  const manifest = JSON.parse(readFileSync(join(dir, '.next', 'server', 'server-reference-manifest.json'), 'utf8')) as {
    node: Record<string, { exportedName?: string }>;
  };
  const id = Object.entries(manifest.node).find(([, action]) => action.exportedName === 'send')![0];
  const call = async (): Promise<unknown> => {
    const res = await as('203.0.113.8')(request(proxied).post('/form'))
      .set({ 'Next-Action': id, Accept: 'text/x-component', 'Content-Type': 'text/plain;charset=UTF-8' })
      .send('[null,null]');
    expect(res.status).toBe(200);
    // The React Server Components answer: row 1 is the action's return value.
    const row = res.text.split('\n').find((line) => line.startsWith('1:'));
    return JSON.parse(row!.slice(2));
  };
  expect([await call(), await call()]).toEqual([{ ok: true }, { ok: true }]);
  expect(await call()).toEqual({
    rateLimited: true,
    message: expect.stringMatching(/^Rate limit exceeded/),
    retryAfterMs: expect.any(Number),
  });
});
