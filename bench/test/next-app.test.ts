import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NEXT_APP, buildNextApp, nextAppHash } from '../src/http/apps-next';
import { fork } from 'node:child_process';
import { createServer } from 'node:net';
import { LISTEN_FAILED, startProcess, startServers, type Server } from '../src/http/servers';
import { commandCalls, startBenchRedis, type BenchRedis } from '../src/lib/machine';
import type { ShapeName } from '../src/http/shapes';
import { TEST_DEADLINE } from '@floodgate/testing';

/*
 * The Next.js row of `npm run bench`: bench/next-app built (`next build`, a minute or more on 2 cores; a
 * second call finds it cached), then the row's servers as the bench starts them (server.ts, each in a
 * process of its own), asked as wrk asks (`GET /`, x-client-id): each answers 200 or 429 as its variant
 * should, and Floodgate's checks cost the Redis calls the row counts. Second tier (jest.config.ts: bench/).
 */
let redis: BenchRedis;
const servers: Server[] = [];

beforeAll(async () => {
  // The servers (forked, with this environment) take the test deadline: a check that outran the bench's
  // 250 ms on a loaded machine would be the failure policy's answer, and the counts below would move.
  process.env.FLOODGATE_TIMEOUT_MS = String(TEST_DEADLINE.timeoutMs);
  buildNextApp();
  redis = await startBenchRedis();
}, 600_000);

afterAll(async () => {
  delete process.env.FLOODGATE_TIMEOUT_MS;
  for (const s of servers) s.stop();
  await redis?.stop();
});

async function start(shape: ShapeName, variants: string[]): Promise<Map<string, Server>> {
  const started = await startServers(variants.map((variant) => ({ framework: 'next', variant, shape, redisUrl: redis.url })));
  servers.push(...started);
  return new Map(variants.map((v, i) => [v, started[i]!]));
}

const get = async (server: Server, client: string) => {
  const res = await fetch(`http://127.0.0.1:${server.port}/`, { headers: { 'x-client-id': client } });
  return { status: res.status, ratelimit: res.headers.get('ratelimit'), body: await res.text() };
};

/** Script calls (EVALSHA, EVAL) Redis has run so far. */
const scripts = (): number => {
  const calls = commandCalls(redis.cli('INFO', 'commandstats'));
  return (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
};

test('the build is cached by its sources: a second call does not build, and the stamp is their hash', () => {
  expect(buildNextApp()).toBe(false);
  expect(readFileSync(join(NEXT_APP, '.next', 'floodgate-bench-sources'), 'utf8')).toBe(nextAppHash());
  expect(existsSync(join(NEXT_APP, '.next', 'server', 'middleware.js'))).toBe(true);
});

test('equal: every server answers 200, the limited ones with their RateLimit header, each check one script call at most', async () => {
  const s = await start('equal', ['baseline', 'floodgate', 'floodgate-route']);
  const plain = await get(s.get('baseline')!, '1');
  expect(plain).toEqual({ status: 200, ratelimit: null, body: 'ok' });
  for (const variant of ['floodgate', 'floodgate-route']) {
    const server = s.get(variant)!;
    await get(server, '0'); // the script loaded
    const before = scripts();
    for (let c = 1; c <= 20; c++) {
      const r = await get(server, String(c));
      expect(r.status).toBe(200);
      expect(r.body).toBe('ok');
      expect(r.ratelimit).toMatch(new RegExp(`^"bench-equal-${variant}-1m";r=999999999;t=\\d+$`));
    }
    // One after another, no two checks share a call: one each at most (the proxy runs once a request).
    expect(scripts() - before).toBeLessThanOrEqual(20);
    expect(scripts() - before).toBeGreaterThan(0);
  }
}, 180_000);

test('hot: past its first 100 requests the client is denied with the same 429 as the hand-written one, and a blocked client costs Redis nothing', async () => {
  const s = await start('hot', ['floodgate', 'floodgate-route', '429', '429-route']);
  const hand = await get(s.get('429')!, 'hot');
  expect(hand.status).toBe(429);
  expect(await get(s.get('429-route')!, 'hot')).toEqual(hand);
  for (const variant of ['floodgate', 'floodgate-route']) {
    const server = s.get(variant)!;
    // Admitted up to the limit, then denied from the 101st request.
    const statuses: number[] = [];
    for (let i = 0; i < 101; i++) statuses.push((await get(server, 'hot')).status);
    expect(statuses).toEqual([...Array<number>(100).fill(200), 429]);
    const before = scripts();
    const denied = await get(server, 'hot');
    expect(denied.status).toBe(429);
    expect(JSON.parse(denied.body)).toEqual({
      ...JSON.parse(hand.body),
      message: expect.stringMatching(/^Rate limit exceeded, retry in \d+ seconds$/),
    });
    expect(scripts() - before).toBe(0);
  }
}, 180_000);

test("one process serves several apps of a variant (the smoke run's), each with its own shape's limiter", async () => {
  const [equal, hot] = await startProcess('next', 'floodgate', [
    { shape: 'equal', redisUrl: redis.url },
    { shape: 'hot', redisUrl: redis.url },
  ]);
  servers.push(equal!);
  for (const [server, name] of [
    [equal!, 'bench-equal-floodgate-1m'],
    [hot!, 'bench-hot-floodgate-[a-z0-9]+'],
  ] as const) {
    const r = await get(server, 'one-process');
    expect(r.status).toBe(200);
    expect(r.ratelimit).toMatch(new RegExp(`^"${name}";r=\\d+;t=\\d+$`));
  }
  // The hot app's limit (100) is its own: the equal app's client with the same id is not denied.
  for (let i = 0; i < 100; i++) await get(hot!, 'one-process');
  expect((await get(hot!, 'one-process')).status).toBe(429);
  expect((await get(equal!, 'one-process')).status).toBe(200);
}, 180_000);

test('a server whose port was taken before it listened exits with LISTEN_FAILED, for startProcess to pick others', async () => {
  // Next.js's server logs an uncaught error and carries on: the listen's EADDRINUSE left the process neither
  // listening nor exiting, and a parallel test run that took its port hung here.
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
  const port = (taken.address() as { port: number }).port;
  const child = fork(
    join(__dirname, '..', 'src', 'http', 'server.ts'),
    ['next', 'floodgate', JSON.stringify([{ shape: 'equal', url: redis.url, port }])],
    {
      execArgv: ['-r', join(__dirname, '..', '..', 'test', 'ts-register.cjs')],
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    },
  );
  try {
    // Awaited, not timed: the 60 s only turn a process that stays into a failure (and stop it, so Jest can exit).
    const exit = await new Promise<number | null | 'still running'>((resolve) => {
      const bound = setTimeout(() => resolve('still running'), 60_000);
      child.once('exit', (code) => {
        clearTimeout(bound);
        resolve(code);
      });
    });
    expect(exit).toBe(LISTEN_FAILED);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    taken.close();
  }
}, 180_000);
