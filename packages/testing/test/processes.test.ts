import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisExitedError, RedisProcess, clusterNodePort, freePort, spawnRedis } from '../src/processes';

/*
 * The test servers' own start-up. A Cluster test failed in CI with "did not answer PING within 10000 ms":
 * a node whose port (or cluster bus port, port + 10,000) another process held exits at once, and a node
 * above port 55535 is refused by Redis; both were waited on for the whole timeout and never retried.
 */
const held: Server[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function hold(): Promise<number> {
  const port = await freePort();
  // Whatever connects (the PING probe) is dropped, so close() has no connection to wait for.
  const srv = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => srv.listen(port, '127.0.0.1', resolve));
  held.push(srv);
  return port;
}

test('a server that cannot bind its port fails at once with RedisExitedError, not after the PING timeout', async () => {
  const port = await hold();
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-redis-'));
  dirs.push(dir);
  const started = Date.now();
  await expect(new RedisProcess(port, [], dir).start()).rejects.toBeInstanceOf(RedisExitedError);
  expect(Date.now() - started).toBeLessThan(3_000);
});

test('Redis refuses a Cluster node above port 55535; clusterNodePort never picks one, and leaves its bus port free', async () => {
  const started = Date.now();
  await expect(spawnRedis(['--cluster-enabled', 'yes'], 58_000)).rejects.toBeInstanceOf(RedisExitedError);
  expect(Date.now() - started).toBeLessThan(3_000);
  for (let i = 0; i < 30; i++) {
    const port = await clusterNodePort();
    expect(port).toBeLessThanOrEqual(55_535);
    const bus = createServer();
    await new Promise<void>((resolve, reject) => {
      bus.once('error', reject);
      bus.listen(port + 10_000, '127.0.0.1', resolve);
    });
    await new Promise((r) => bus.close(r));
  }
});

test('a Cluster node started without a port comes up on one that fits', async () => {
  const node = await spawnRedis(['--cluster-enabled', 'yes']);
  try {
    expect(node.port).toBeLessThanOrEqual(55_535);
  } finally {
    await node.stop();
  }
});
