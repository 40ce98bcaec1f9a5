import Redis from 'ioredis';
import { createLimiter, type DecisionEvent, type LimiterEvent, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, scripted, uniquePrefix } from '@floodgate/testing';

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
    // A deadline no loaded machine runs out: every one of its calls is answered, so each is a sample.
    const l = createLimiter({ redis, prefix: uniquePrefix('h'), limits: { limit: 5, window: '1m' }, timeoutMs: 10_000 });
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

  describe('on a scripted store (virtual time)', () => {
    /** A limiter on a scripted store (limit 5 per minute unless `options` say otherwise). */
    const scriptedLimiter = (options: Partial<LimiterOptions>) =>
      scripted({ prefix: uniquePrefix('hp'), limits: { limit: 5, window: '1m' }, logger: quiet, ...options });

    test('down when the store cannot be reached, with the last error; degraded once it answers; ok a minute later', async () => {
      const { store, rt, limiter } = scriptedLimiter({ timeoutMs: 100 });
      await limiter.check('ip:1');
      store.behave('hold');
      const check = limiter.check('ip:1');
      await rt.advance(100);
      expect((await check).error?.kind).toBe('timeout');
      const down = await limiter.health({ probe: false });
      expect(down.status).toBe('down');
      expect(down.lastError).toMatchObject({ kind: 'timeout', at: rt.wall() });
      store.behave({ answer: 1 });
      store.release();
      await rt.advance(400);
      const answered = limiter.check('ip:1');
      await rt.advance(1);
      await answered;
      // Answering again; the timeout of a moment ago still marks it degraded...
      const back = await limiter.health({ probe: false });
      expect(back.status).toBe('degraded');
      expect(back.lastOkAt).toBe(rt.wall());
      // ...for a minute.
      await rt.advance(60_000);
      expect((await limiter.health({ probe: false })).status).toBe('ok');
    });

    test('one slow call (a first one waiting for its connection, say) leaves it ok; three make it degraded', async () => {
      // Deadline 800 ms: a call over 400 ms is slow. The store answers a slow check after 550 ms, in time.
      const { store, rt, limiter } = scriptedLimiter({ limits: { limit: 100, window: '1m' }, timeoutMs: 800 });
      const slowCheck = async (): Promise<void> => {
        store.next({ answer: 550 });
        expect((await rt.until(limiter.check('ip:1'))).allowed).toBe(true);
      };
      await slowCheck();
      for (let k = 0; k < 5; k++) await limiter.check('ip:1');
      const once = await limiter.health({ probe: false });
      expect(once.latencyMs).toMatchObject({ max: 550, p50: 0, samples: 6 });
      expect(once.lastError).toBeUndefined();
      expect(once.status).toBe('ok');
      await slowCheck();
      await slowCheck();
      const thrice = await limiter.health({ probe: false });
      expect(thrice.lastError).toBeUndefined();
      expect(thrice.status).toBe('degraded');
    });

    test('degraded when the store answers with errors (out of memory)', async () => {
      const { store, limiter } = scriptedLimiter({ failure: 'closed' });
      store.next({ error: 'reply' });
      expect((await limiter.check('ip:1')).reason).toBe('store-unavailable');
      const health = await limiter.health({ probe: false });
      expect(health.status).toBe('degraded');
      expect(health.lastError).toMatchObject({ kind: 'reply' });
    });

    test('an idle limiter probes its store first (one peek, consuming nothing); a busy one does not', async () => {
      const { store, rt, limiter } = scriptedLimiter({});
      const idle = await limiter.health();
      expect(idle).toMatchObject({ status: 'ok', probed: true });
      expect(store.received).toBe(1);
      expect((await limiter.health()).probed).toBe(false);
      await rt.advance(1_001);
      expect((await limiter.health()).probed).toBe(true);
      expect(store.received).toBe(2);
      // A probe the store never answers: health() still answers, at the deadline, and says the store is down.
      store.behave('never');
      await rt.advance(1_001);
      const probing = limiter.health();
      await rt.advance(250);
      expect(await probing).toMatchObject({ status: 'down', probed: true, lastError: { kind: 'timeout' } });
    });

    test('a probe is no decision: listeners get a health-check event, never a decision of ~floodgate:health', async () => {
      const events: LimiterEvent[] = [];
      const { store, rt, limiter } = scriptedLimiter({ onEvent: (e) => events.push(e), events: { identifiers: true } });
      expect(await limiter.health()).toMatchObject({ status: 'ok', probed: true });
      expect(store.received).toBe(1);
      await limiter.health();
      // A scrape's read is not counted.
      await limiter.health({ probe: false });
      store.behave('never');
      await rt.advance(1_001);
      const probing = limiter.health();
      await rt.advance(250);
      await probing;
      expect(events.filter((e) => e.type !== 'store-error')).toEqual([
        { type: 'health-check', limiter: 'default', status: 'ok', probed: true },
        { type: 'health-check', limiter: 'default', status: 'ok', probed: false },
        { type: 'health-check', limiter: 'default', status: 'down', probed: true },
      ]);
      // The probe that failed is a store error all the same: the store did fail.
      expect(events.filter((e) => e.type === 'store-error')).toHaveLength(1);
    });
  });
});
