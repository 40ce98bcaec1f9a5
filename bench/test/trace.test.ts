import Redis from 'ioredis';
import { startTrace } from '../src/http/load';
import { startBenchRedis } from '../src/lib/machine';

/*
 * The MONITOR trace the throughput phase counts commands per request with (bench/src/http/load.ts): it is on
 * before its start returns and has everything Redis ran before its stop, with no sleep long enough to matter.
 */
test('counts every command Redis ran between start and stop, wire and script-internal apart, and nothing of its own', async () => {
  const r = await startBenchRedis();
  const client = new Redis(r.url);
  try {
    await client.set('before', '1'); // before the trace: not counted
    const trace = await startTrace(r.port);
    // Sent at once after the start: MONITOR must already be on for the first.
    const sets = Array.from({ length: 200 }, (_, i) => client.set(`k${i}`, '1'));
    const evals = Array.from({ length: 50 }, (_, i) =>
      client.eval("redis.call('INCR', KEYS[1]); return redis.call('GET', KEYS[1])", 1, `n${i}`),
    );
    await Promise.all([...sets, ...evals]);
    const got = await trace.stop(250);
    expect(got.requests).toBe(250);
    expect(Object.fromEntries(got.wire)).toEqual({ set: 200, eval: 50 });
    expect(got.lua).toBe(100); // the INCR and GET inside each script
  } finally {
    client.disconnect();
    await r.stop();
  }
});
