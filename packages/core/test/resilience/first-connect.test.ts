import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
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
 * docs/security.md, "The deadline at first connect", on real servers and a real client: a check never waits
 * for a client's first connection longer than `timeoutMs`, and a check that gave up while waiting is never
 * sent later. Each case uses a real server that accepts TCP and then does not answer; what is asserted is
 * what the checks decided and what reached Redis, never how many milliseconds they took (the deadline
 * itself, in virtual time, is test/attacks/first-connect.test.ts).
 */
afterAll(closeClients);

const quiet = { warn: () => undefined };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
    // The server never answers and the client never connects (connectTimeout 60 s): a check can only settle
    // by its own deadline, so that they all settle, by the policy, is the proof.
    let policy = 0;
    await Promise.all(
      Array.from({ length: 20_000 }, (_, i) =>
        limiter.check(`ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`).then((d) => {
          // The policy ('open' admits); or, for a check whose whole budget this process itself spent before
          // it could even wait (a GC pause on a loaded machine), overload, which 'open' sheds.
          if (d.source === 'fallback' && (d.allowed ? d.error?.kind === 'timeout' : d.error?.kind === 'overload')) policy++;
        }),
      ),
    );
    // Before: none of them settled (the wait for `ready` had no deadline); 200,000 such checks held 412 MB.
    expect(policy).toBe(20_000);
    // The checks that gave up are not held anywhere: the heap is back near where it was.
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
    const decisions = await Promise.all(Array.from({ length: 500 }, (_, i) => limiter.check(`ip:10.1.${i >> 8}.${i & 255}`)));
    expect(decisions.every((d) => !d.allowed && d.reason === 'store-unavailable')).toBe(true);
    // The pause ends (the admin's own command, paused too, is answered), the client connects, and a check is
    // Redis's: the 500 checks that gave up were never sent (sent, they would have run before it).
    await admin.ping();
    let decided: Decision | undefined;
    for (let i = 0; i < 200 && decided?.source !== 'redis'; i++) {
      if (i > 0) await sleep(50);
      decided = await limiter.check('ip:1.2.3.4');
    }
    expect(decided?.source).toBe('redis');
    const stats = await commandStats(admin);
    expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBeLessThanOrEqual(2);
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
    const decisions = await Promise.all(Array.from({ length: 1_000 }, (_, i) => limiter.check(`ip:10.2.${i >> 8}.${i & 255}`)));
    // Well before the dataset is loaded (seconds): the policy's answers say none of them waited for Redis
    // (overload: a check whose budget this loaded process spent before it could wait).
    expect(decisions.every((d) => d.source === 'fallback' && (d.error?.kind === 'timeout' || d.error?.kind === 'overload'))).toBe(true);
    await waitForPing(port, 60_000);
    let decided: Decision | undefined;
    for (let i = 0; i < 300 && decided?.source !== 'redis'; i++) {
      await sleep(50);
      decided = await limiter.peek('ip:192.0.2.1');
    }
    expect(decided?.source).toBe('redis');
    // The 1,000 checks that gave up were not run once the data was loaded (sent, they would have run before
    // the peek Redis answered).
    const stats = await commandStats(connect(`redis://127.0.0.1:${port}`));
    expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBeLessThanOrEqual(2);
    await limiter.close();
  } finally {
    loading.kill('SIGKILL');
    await seed.stop();
  }
}, 90_000);
