import Redis from 'ioredis';
import { createLimiter, type DecisionEvent, type LimiterEvent, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, startRedis, uniquePrefix, type StartedRedis } from '@floodgate/testing';

/*
 * Issue 15: decision events (every decision, refund, store error; identifiers only when asked) and
 * limiter.health() (store state, breaker, latency percentiles, last error; probing an idle store).
 */
afterAll(closeClients);
const redis = connect();
const quiet = { warn: () => undefined };

function recording(options: Partial<LimiterOptions> = {}) {
  const events: LimiterEvent[] = [];
  const limiter = createLimiter({
    redis,
    prefix: uniquePrefix('ev'),
    limits: { limit: 2, window: '1m' },
    failure: 'closed',
    logger: quiet,
    onEvent: (e) => events.push(e),
    ...options,
  });
  const decisions = (): DecisionEvent[] => events.filter((e): e is DecisionEvent => e.type === 'decision');
  return { limiter, events, decisions };
}

describe('decision events', () => {
  test('allowed, denied by the rule, answered from the block cache: outcome, source, rule, kind, latency', async () => {
    const { limiter, decisions } = recording();
    await limiter.check(['ip:1', 'user:a']);
    await limiter.check('ip:1');
    await limiter.check('ip:1');
    await limiter.check('ip:1');
    const [a, b, c, d] = decisions();
    expect(a).toMatchObject({
      type: 'decision',
      limiter: 'default',
      outcome: 'allowed',
      source: 'redis',
      shadow: false,
      kind: 'ip',
      cost: 1,
    });
    expect(a!.rule).toEqual({ limit: 2, windowMs: 60_000 });
    expect(a!.latencyMs).toBeGreaterThan(0);
    expect(a!.identifier).toBeUndefined();
    expect(b).toMatchObject({ outcome: 'allowed', source: 'redis' });
    expect(c).toMatchObject({ outcome: 'denied', source: 'redis' });
    expect(d).toMatchObject({ outcome: 'denied', source: 'cache', latencyMs: undefined });
    await limiter.close();
  });

  test('blocks, lockouts, refunds, plans and the identifier when asked for', async () => {
    const { limiter, events, decisions } = recording({
      limits: { free: [{ limit: 1, window: '1m' }], pro: [{ limit: 5, window: '1m' }] },
      lockout: { after: 1, within: '1m', duration: '1m', scope: 'user' },
      refunds: true,
      events: { identifiers: true },
      blockCache: false,
    });
    const admitted = await limiter.check('user:a', { plan: 'pro' });
    await limiter.refund(admitted);
    await limiter.check('user:b');
    await limiter.check('user:b'); // denied: the lockout starts
    await limiter.check('user:b');
    await limiter.block('user:c', { duration: '1m', reason: 'abuse' });
    await limiter.check('user:c');
    expect(decisions().map((e) => [e.outcome, e.identifier, e.plan])).toEqual([
      ['allowed', 'user:a', 'pro'],
      // No plan named: the first, which the event names.
      ['allowed', 'user:b', 'free'],
      ['lockout', 'user:b', 'free'],
      ['lockout', 'user:b', 'free'],
      ['blocked', 'user:c', 'free'],
    ]);
    expect(events.find((e) => e.type === 'refund')).toEqual({
      type: 'refund',
      limiter: 'default',
      cost: 1,
      kinds: ['user'],
      identifiers: ['user:a'],
    });
    await limiter.close();
  });

  test('the failure policy and shadow mode say so', async () => {
    const dead = new Redis(1, '127.0.0.1', {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 100,
    });
    dead.on('error', () => undefined);
    const { limiter, events, decisions } = recording({ redis: dead, failure: 'open', timeoutMs: 50 });
    await limiter.check('ip:1');
    expect(decisions()[0]).toMatchObject({ outcome: 'allowed', source: 'fallback' });
    expect(events.some((e) => e.type === 'store-error')).toBe(true);
    await limiter.close();
    dead.disconnect();
    const shadow = recording({ mode: 'shadow', limits: { limit: 1, window: '1m' } });
    await shadow.limiter.check('ip:1');
    const d = await shadow.limiter.check('ip:1');
    expect(d.allowed).toBe(true);
    expect(shadow.decisions()[1]).toMatchObject({ outcome: 'denied', shadow: true });
    await shadow.limiter.close();
  });

  test('subscribe() adds listeners until unsubscribed; a listener that throws is a warning, never a failed check', async () => {
    const warnings: string[] = [];
    const limiter = createLimiter({
      redis,
      prefix: uniquePrefix('sub'),
      limits: { limit: 5, window: '1m' },
      logger: { warn: (m) => void warnings.push(m) },
    });
    const seen: string[] = [];
    const stop = limiter.subscribe((e) => void seen.push(e.type));
    limiter.subscribe(() => {
      throw new Error('listener broke');
    });
    expect((await limiter.check('ip:1')).allowed).toBe(true);
    stop();
    await limiter.check('ip:1');
    expect(seen).toEqual(['decision']);
    expect(warnings.some((w) => w.includes('listener broke'))).toBe(true);
    expect(() => limiter.subscribe('nope' as never)).toThrow(/takes a function/);
    await limiter.close();
  });
});

describe('health()', () => {
  test('the in-memory store is ok; a Redis that answers is ok, with its round trips', async () => {
    const memory = createLimiter({ prefix: uniquePrefix('hm'), limits: { limit: 5, window: '1m' } });
    expect(await memory.health()).toMatchObject({ status: 'ok', store: 'memory', breaker: 'none', probed: false });
    const l = createLimiter({ redis, prefix: uniquePrefix('h'), limits: { limit: 5, window: '1m' } });
    const idle = await l.health();
    // Never heard from the store: it probed it, and it answered.
    expect(idle).toMatchObject({ status: 'ok', store: 'redis', breaker: 'closed', probed: true, lastError: undefined });
    expect(idle.latencyMs!.samples).toBe(1);
    for (let k = 0; k < 20; k++) await l.check(`ip:${k}`);
    const busy = await l.health();
    expect(busy.probed).toBe(false);
    expect(busy.latencyMs!.samples).toBe(21);
    expect(busy.latencyMs!.p50).toBeLessThanOrEqual(busy.latencyMs!.p99);
    await memory.close();
    await l.close();
  });

  describe('on a private server', () => {
    let server: StartedRedis;
    beforeEach(async () => {
      server = await startRedis();
    });
    afterEach(() => server.stop());
    /** A limiter on the private server (limit 5 per minute unless `options` say otherwise). */
    const privateLimiter = (options: Partial<LimiterOptions>) =>
      createLimiter({
        redis: connect(server.url),
        prefix: uniquePrefix('hp'),
        limits: { limit: 5, window: '1m' },
        logger: quiet,
        ...options,
      });

    test('down when the store cannot be reached, with the last error; ok again once it answers', async () => {
      const l = privateLimiter({ timeoutMs: 100 });
      await l.check('ip:1');
      const admin = connect(server.url);
      await admin.client('PAUSE', 400, 'ALL');
      await l.check('ip:1');
      const down = await l.health({ probe: false });
      expect(down.status).toBe('down');
      expect(down.lastError).toMatchObject({ kind: 'timeout' });
      await new Promise((r) => setTimeout(r, 500));
      await l.check('ip:1');
      const back = await l.health({ probe: false });
      // Answering again; the timeout of a moment ago still marks it degraded.
      expect(back.status).toBe('degraded');
      await l.close();
    });

    test('one slow call (a first one waiting for its connection, say) leaves it ok; three make it degraded', async () => {
      // Deadline 800 ms: a call over 400 ms is slow. CLIENT PAUSE holds a check for 550 ms, answered in time.
      const admin = connect(server.url);
      const l = privateLimiter({ limits: { limit: 100, window: '1m' }, timeoutMs: 800 });
      const slowCheck = async (): Promise<void> => {
        await admin.client('PAUSE', 550, 'WRITE');
        expect((await l.check('ip:1')).allowed).toBe(true);
      };
      await slowCheck();
      for (let k = 0; k < 5; k++) await l.check('ip:1');
      const once = await l.health({ probe: false });
      expect(once.latencyMs!.max).toBeGreaterThan(400);
      expect(once.lastError).toBeUndefined();
      expect(once.status).toBe('ok');
      await slowCheck();
      await slowCheck();
      const thrice = await l.health({ probe: false });
      expect(thrice.lastError).toBeUndefined();
      expect(thrice.status).toBe('degraded');
      await l.close();
    });

    test('degraded when Redis answers with errors (out of memory)', async () => {
      const admin = connect(server.url);
      await admin.config('SET', 'maxmemory', '1');
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      // A deadline far above the previous test's last CLIENT PAUSE (550 ms, maybe still holding writes): the
      // check must get Redis's refusal, not time out waiting (a timeout is 'down', rightly).
      const l = privateLimiter({ failure: 'closed', timeoutMs: 5_000 });
      // A check writes, so Redis refuses it (a peek, which writes nothing, would still be answered).
      expect((await l.check('ip:1')).reason).toBe('store-unavailable');
      const health = await l.health({ probe: false });
      expect(health.status).toBe('degraded');
      expect(health.lastError).toMatchObject({ kind: 'reply' });
      await l.close();
    });
  });
});
