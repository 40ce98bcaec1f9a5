import { createServer, type Server, type Socket } from 'node:net';
import { createLimiter } from '@floodgate/core';
import { closeClients, connect, freePort } from '@floodgate/testing';

/*
 * What a person reads: durations in warnings and errors are whole milliseconds ("within 150 ms"), never the
 * clock's fractions ("within 149.99520200000006 ms").
 */
afterAll(closeClients);

test('a deadline missed while the client connects reads in whole milliseconds, in the warning and the decision', async () => {
  const sockets: Socket[] = [];
  const silent: Server = createServer((s) => void sockets.push(s.on('error', () => undefined)));
  const port = await freePort();
  await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
  const warnings: string[] = [];
  const client = connect(`redis://127.0.0.1:${port}`, { connectTimeout: 60_000 });
  const limiter = createLimiter({
    redis: client,
    prefix: 'messages',
    limits: { limit: 5, window: '1m' },
    timeoutMs: 150,
    failure: 'open',
    logger: { warn: (m) => void warnings.push(m) },
  });
  try {
    const errors: string[] = [];
    for (let i = 0; i < 3; i++) {
      // Time spent in this process before the call leaves shortens what is left of the deadline.
      const started = performance.now();
      while (performance.now() - started < 3.3) {
        /* busy: a fractional part of a millisecond gone */
      }
      const decision = await limiter.check('ip:203.0.113.9');
      if (decision.error) errors.push(decision.error.message);
    }
    const texts = [...warnings, ...errors];
    expect(texts.join('\n')).toMatch(/within \d+ ms/);
    const durations = texts.flatMap((t) => [...t.matchAll(/(\d+(?:\.\d+)?) ms\b/g)].map((m) => m[1]!));
    expect(durations.length).toBeGreaterThan(0);
    expect(durations.filter((d) => !/^\d+$/.test(d))).toEqual([]);
  } finally {
    await limiter.close();
    for (const s of sockets) s.destroy();
    silent.close();
  }
});
