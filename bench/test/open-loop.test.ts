import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openLoop } from '../src/http/open-loop';
import { startSlowProxy } from '../src/lib/slow-proxy';
import { startBenchRedis } from '../src/lib/machine';
import Redis from 'ioredis';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';

/*
 * The latency phase's load generator (bench/src/http/open-loop.c) against servers whose behaviour is known:
 * it sends what the schedule says, counts denials, and times a request from when it was due, so a stall
 * shows in every request due during it (a closed-loop tool would show one per connection).
 */
async function listen(handler: (answer: (status: number) => void) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => handler((status) => res.writeHead(status, { 'content-type': 'text/plain' }).end('ok')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}
const close = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

test('sends exactly the scheduled requests after the warm-up, and counts the ones that were not 2xx', async () => {
  let n = 0;
  const { server, port } = await listen((answer) => answer(++n % 4 === 0 ? 429 : 200));
  try {
    const r = await openLoop({ port, rate: 400, seconds: 1, warmup: 0.25, connections: 8, clients: 100 });
    expect(r.scheduled).toBe(500); // 400/s for 1.25 s
    expect(r.measured).toBe(400); // those due after the warm-up
    expect(r.lost + r.errors).toBe(0);
    expect(n).toBe(500);
    // Every fourth answer was a 429: a quarter of the measured ones, give or take where the warm-up cut.
    expect(Math.abs(r.non2xx - 100)).toBeLessThanOrEqual(1);
    expect(r.p50Us).toBeGreaterThan(0);
    expect(r.p50Us).toBeLessThanOrEqual(r.p99Us);
    expect(r.p99Us).toBeLessThanOrEqual(r.p999Us);
  } finally {
    await close(server);
  }
});

test('a stall delays every request due during it: latency counts from when a request was due (no coordinated omission)', async () => {
  // Every request that arrives in the second half-second is held until that half-second ends.
  let first: number | undefined;
  const { server, port } = await listen((answer) => {
    first ??= Date.now();
    const at = Date.now() - first;
    if (at >= 500 && at < 1000) setTimeout(() => answer(200), 1000 - at);
    else answer(200);
  });
  try {
    const r = await openLoop({ port, rate: 200, seconds: 2, warmup: 0, connections: 4, clients: 0 });
    expect(r.measured).toBe(400);
    // ~100 of the 400 requests were due during the stall, waiting 0-500 ms for its end: the slowest tenth
    // waited at least ~100 ms. A closed-loop count would hold 4 slow requests (one per connection), 1%.
    expect(r.p90Us).toBeGreaterThan(100_000);
    expect(r.maxUs).toBeGreaterThan(400_000);
  } finally {
    await close(server);
  }
});

/** A client of a redis-server of its own through the slow proxy at `delayMs`, for `fn`. */
async function throughSlowProxy(delayMs: number, fn: (client: Redis) => Promise<void>): Promise<void> {
  const redis = await startBenchRedis();
  const proxy = await startSlowProxy(redis.port, delayMs);
  const client = new Redis(proxy.url, { maxRetriesPerRequest: 0 });
  try {
    await client.ping();
    await fn(client);
  } finally {
    client.disconnect();
    await proxy.close();
    await redis.stop();
  }
}

test('the slow Redis answers every reply late, in order', () =>
  throughSlowProxy(50, async (client) => {
    const t0 = process.hrtime.bigint();
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => client.echo(String(i))));
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    expect(ms).toBeGreaterThanOrEqual(50); // a lower bound only: a busy machine makes it later, never sooner
  }));

test('the slow Redis holds every reply for the whole delay, never less, one command after another', () =>
  // A proxy on the event loop's millisecond timers held a "1 ms" reply anywhere from almost nothing to 1 ms
  // (the loop's clock is a cached millisecond), so what a limiter paid depended on how its chunks fell.
  throughSlowProxy(1, async (client) => {
    const rtts: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = process.hrtime.bigint();
      await client.ping();
      rtts.push(Number(process.hrtime.bigint() - t0) / 1e3);
    }
    expect(Math.min(...rtts)).toBeGreaterThanOrEqual(1_000); // µs; a lower bound only, as a busy machine is later
  }));

test('the slow Redis outlives a connection Redis closed while the client still writes on it', async () => {
  const redis = await startBenchRedis();
  // Held for a minute, the upstream's close cannot end the pair during the test: only a failed write can.
  const proxy = await startSlowProxy(redis.port, 60_000);
  const port = Number(new URL(proxy.url).port);
  const lost = connect(port, '127.0.0.1');
  const closed = new Promise<void>((resolve) => lost.once('close', () => resolve()));
  lost.on('error', () => undefined);
  try {
    // The proxy's upstream connection, beside redis-cli's own.
    await until(() => redis.cli('CLIENT', 'LIST', 'TYPE', 'normal').split('\n').length >= 2);
    // Redis drops the proxy's upstream connection (the proxy holds that end as it would a reply). The client
    // writes on until the proxy gives the pair up: its first write draws Redis's reset, a later one meets it
    // (EPIPE, and SIGPIPE, which used to kill the proxy and with it every later server's slow Redis).
    expect(redis.cli('CLIENT', 'KILL', 'TYPE', 'normal').trim()).not.toBe('0');
    let given = false;
    void closed.then(() => (given = true));
    await until(() => {
      if (!given) lost.write('PING\r\n');
      return given;
    });
    expect(alive(proxy.pid)).toBe(true);
    const fresh = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => fresh.once('connect', resolve).once('error', reject));
    fresh.destroy();
  } finally {
    lost.destroy();
    await proxy.close();
    await redis.stop();
  }
});

/** Polls `check` (every 5 ms) until it holds; fails after 10 s. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('the slow Redis ends with the process that started it, even one killed outright', async () => {
  // A bench run stopped with SIGKILL used to leave its proxy running, bound to a port, for good.
  const script = `require(${JSON.stringify(join(__dirname, '../src/lib/slow-proxy.ts'))}).startSlowProxy(1, 1).then((p) => console.log(p.pid))`;
  const child = execFile(process.execPath, ['-r', join(__dirname, '../../test/ts-register.cjs'), '-e', script]);
  // The proxy inherits the starter's stderr, this test's pipe: the pipe closes once both have let go of their
  // files, which a process does as it exits.
  const stderrClosed = new Promise<void>((resolve) => child.stderr!.once('close', () => resolve()));
  const pid = await new Promise<number>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  expect(alive(pid)).toBe(true);
  child.kill('SIGKILL');
  // A proxy that outlived its starter holds the pipe for good: the bound only turns that into a failure.
  let bound: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    stderrClosed.then(() => 'closed'),
    new Promise<string>((resolve) => (bound = setTimeout(() => resolve('still open after 30 s'), 30_000))),
  ]);
  clearTimeout(bound);
  // A proxy left behind would hold the port and this test's pipe (and keep Jest from exiting): end it either way.
  // (Once the pipe has closed, the proxy has given up its files and is exiting: it may not be reaped yet.)
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  expect(outcome).toBe('closed');
}, 60_000);

/** Whether `pid` runs: an exited process its new parent has not reaped yet (a zombie) does not. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
