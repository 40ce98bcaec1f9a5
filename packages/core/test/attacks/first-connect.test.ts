import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Redis from 'ioredis';
import { createLimiter, type Decision } from '@floodgate/core';
import {
  closeClients,
  collectGarbage,
  commandStats,
  connect,
  freePort,
  redisServerBinary,
  spawnRedis,
  waitForPing,
} from '@floodgate/testing';

/*
 * docs/security.md, "The deadline at first connect": a check never waits longer than `timeoutMs`, also
 * while its client is connecting for the first time, and a check that gave up while waiting is never sent
 * later. Each case uses a real server that accepts TCP and then does not answer.
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function timedAll(checks: Promise<Decision>[]): Promise<{ decisions: Decision[]; slowestMs: number }> {
  const t0 = performance.now();
  let slowestMs = 0;
  const decisions = await Promise.all(checks.map((p) => p.then((d) => ((slowestMs = Math.max(slowestMs, performance.now() - t0)), d))));
  return { decisions, slowestMs };
}

test('a server that accepts TCP and never answers: 20,000 checks settle by the deadline, and nothing is left waiting', async () => {
  const sockets: Socket[] = [];
  const silent: Server = createServer((s) => void sockets.push(s.on('error', () => undefined)));
  const port = await freePort();
  await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
  const client = connect(`redis://127.0.0.1:${port}`, { connectTimeout: 60_000 });
  // `memory.maxKeys` caps what 'open' remembers of the identifiers it admitted (docs/security.md, "'open'
  // admits no flood"): 1,000 here, so the heap measured below is what the 20,000 checks themselves left.
  const limiter = createLimiter({
    redis: client,
    prefix: 'silent',
    limits: { limit: 5, window: '1m' },
    timeoutMs: 100,
    memory: { maxKeys: 1_000 },
    logger: quiet,
  });
  try {
    collectGarbage();
    const heapBefore = process.memoryUsage().heapUsed;
    let slowestMs = 0;
    let policy = 0;
    const lag = monitorEventLoopDelay({ resolution: 5 });
    lag.enable();
    await Promise.all(
      Array.from({ length: 20_000 }, (_, i) => {
        const startedAt = performance.now();
        return limiter.check(`ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`).then((d) => {
          slowestMs = Math.max(slowestMs, performance.now() - startedAt);
          if (d.allowed && d.source === 'fallback' && d.error?.kind === 'timeout') policy++;
        });
      }),
    );
    lag.disable();
    // Before: none of them settled (the wait for `ready` had no deadline); 200,000 such checks held 412 MB.
    // 20,000 deadlines expiring in one burst take this process a few hundred ms to answer on a shared
    // 2-core machine (up to ~3 s on a slow one: 3,026 ms seen in CI), so the bound is loose here; the
    // exact bound is checked with 200 checks below.
    expect(slowestMs).toBeLessThan(6_000 + lag.max / 1e6);
    expect(policy).toBe(20_000);
    const few = await timedAll(Array.from({ length: 200 }, (_, i) => limiter.check(`ip:10.9.0.${i}`)));
    expect(few.slowestMs).toBeLessThan(100 + 30 + lag.max / 1e6);
    // The checks that gave up are not held anywhere: the heap is back near where it was.
    await sleep(50);
    collectGarbage();
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(8 * 1024 * 1024);
    expect(client.status).not.toBe('ready');
  } finally {
    await limiter.close();
    client.disconnect();
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});

test('CLIENT PAUSE ALL while a client connects: checks take the policy by the deadline, and none runs after the pause', async () => {
  const server = await spawnRedis();
  const admin = connect(server.url);
  try {
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
    const client = connect(server.url);
    const limiter = createLimiter({
      redis: client,
      prefix: 'paused',
      failure: 'closed',
      limits: { limit: 5, window: '1m' },
      timeoutMs: 100,
      logger: quiet,
    });
    const { decisions, slowestMs } = await timedAll(Array.from({ length: 500 }, (_, i) => limiter.check(`ip:10.1.${i >> 8}.${i & 255}`)));
    expect(slowestMs).toBeLessThan(100 + 300);
    expect(decisions.every((d) => !d.allowed && d.reason === 'store-unavailable')).toBe(true);
    await sleep(1_700);
    // The pause is over and the client ready: the 500 checks that gave up were never sent.
    const stats = await commandStats(admin);
    expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBe(0);
    expect((await limiter.check('ip:1.2.3.4')).source).toBe('redis');
    await limiter.close();
  } finally {
    await server.stop();
  }
});

test('a server loading its dataset (-LOADING, then ready): checks take the policy by the deadline until it is ready', async () => {
  // A dataset big enough (about 2 MB) that Redis serves clients (-LOADING) while it loads it, slowly: 10 µs of
  // delay per key is several seconds of loading (200,000 keys took over 30 s once on a loaded CI machine).
  const seed = await spawnRedis(['--enable-debug-command', 'yes']);
  const admin = new Redis(seed.url);
  await admin.call('DEBUG', 'POPULATE', '100000');
  await admin.save();
  await admin.quit();
  await seed.kill();
  const port = await freePort();
  const loading = spawn(
    redisServerBinary(),
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', seed.dir, '--save', '', '--appendonly', 'no', '--key-load-delay', '10'],
    { stdio: 'ignore' },
  );
  try {
    const client = connect(`redis://127.0.0.1:${port}`, { connectTimeout: 30_000 });
    const limiter = createLimiter({ redis: client, prefix: 'loading', limits: { limit: 5, window: '1m' }, timeoutMs: 100, logger: quiet });
    await sleep(300);
    const { decisions, slowestMs } = await timedAll(Array.from({ length: 1_000 }, (_, i) => limiter.check(`ip:10.2.${i >> 8}.${i & 255}`)));
    // Well before the dataset is loaded (seconds): a fresh-clone CI run on a loaded machine, with this
    // Redis loading beside it, saw 500 ms for the slowest of the 1,000 (the policy's answers, below, say
    // none of them waited for Redis).
    expect(slowestMs).toBeLessThan(100 + 600);
    expect(decisions.every((d) => d.source === 'fallback' && d.error?.kind === 'timeout')).toBe(true);
    await waitForPing(port, 60_000);
    let decided: Decision | undefined;
    for (let i = 0; i < 300 && decided?.source !== 'redis'; i++) {
      await sleep(50);
      decided = await limiter.peek('ip:192.0.2.1');
    }
    expect(decided?.source).toBe('redis');
    // The 1,000 checks that gave up were not run once the data was loaded.
    await sleep(100);
    const stats = await commandStats(connect(`redis://127.0.0.1:${port}`));
    expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBeLessThanOrEqual(2);
    await limiter.close();
  } finally {
    loading.kill('SIGKILL');
    await seed.stop();
  }
}, 90_000);
